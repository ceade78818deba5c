"""Stream fuzzing campaign: random continuous views over a random stream, fed
random batches (multi-row INSERT, COPY text, COPY csv) by two writers while
the server is killed with SIGKILL at random points.

    python -m tests.campaigns.streamfuzz --seed 1 --kills 100

After each restart every acknowledged batch must be in every view, every
failed one (a bad row, or a value a view's expression refuses) in none, and
each batch in flight at the kill either whole in every view or in none:
each view must equal the same query run on PostgreSQL 15 over a table
holding exactly those batches (the oracle).  A batch splitstream refuses
for a data exception must make PostgreSQL's query over it fail too.  Some
rounds stop the writers first and check with nothing in flight.

A failed batch that shows in some views but not in others (``multi-view-
atomicity``), or a refused batch that recovery replays (``refused-batch-
replayed``), fails the run: ingest is atomic across the views of a stream
(issue 14), so neither is a known difference any more.
"""
from __future__ import annotations

import argparse
import contextlib
import itertools
import random
import re
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator

import psycopg

from tests.campaigns import known
from tests.campaigns.streamgen import Batch, StreamSchema, View, ViewGen, random_batch, random_stream
from tests.support.diff import Outcome, differences, execute
from tests.support.servers import Postgres15, SplitstreamServer

KNOWN_FILE = "stream_known_differences.toml"
WRITERS = 2
#: batches each writer finishes in a round before the kill may come
MIN_BATCHES = 4


class Failure(AssertionError):
    """An unexpected finding: the campaign stops (later rounds would only repeat it)."""


class Unrecoverable(Exception):
    """The server cannot open its data directory after a kill: the campaign goes on with a fresh one."""


def _literal(v: object) -> str:
    if v is None:
        return "NULL"
    return "'" + (repr(v) if isinstance(v, float) else str(v)).replace("'", "''") + "'"


def _huge(v: object) -> bool:
    try:
        return abs(float(v)) >= 1e300 if v is not None else False     # 'Infinity' and 'NaN' parse too
    except ValueError:
        return False


def _csv_field(v: object) -> str:
    if v is None:
        return ""                                   # bare empty: NULL
    if isinstance(v, str):
        return '"' + v.replace('"', '""') + '"'    # quoted: '' stays an empty string
    return repr(v) if isinstance(v, float) else str(v)


def _csv(rows: Iterable[tuple]) -> bytes:
    return "".join(",".join(map(_csv_field, r)) + "\n" for r in rows).encode()


def send(cur: psycopg.Cursor, schema: StreamSchema, b: Batch) -> None:
    cols = ", ".join(c for c, _ in schema.all_columns)
    if b.how == "insert":
        values = ", ".join("(" + ", ".join(map(_literal, r)) + ")" for r in b.rows)
        cur.execute(f"INSERT INTO {schema.name} ({cols}) VALUES {values}")   # type: ignore[arg-type]
    elif b.how == "copy-text":
        with cur.copy(f"COPY {schema.name} ({cols}) FROM STDIN") as cp:   # type: ignore[arg-type]
            for r in b.rows:
                cp.write_row([repr(v) if isinstance(v, float) else v for v in r])
    else:
        with cur.copy(f"COPY {schema.name} ({cols}) FROM STDIN (FORMAT csv)") as cp:   # type: ignore[arg-type]
            cp.write(_csv(b.rows))


class Writer(threading.Thread):
    """Sends batches until stopped or the server dies; every batch ends acked, failed or in flight."""

    def __init__(self, dsn: str, schema: StreamSchema, rng: random.Random, bids: Iterator[int]) -> None:
        super().__init__(daemon=True)
        self.dsn, self.schema, self.rng, self.bids = dsn, schema, rng, bids
        self.batches: list[Batch] = []
        self.stop = threading.Event()

    def finished(self) -> int:
        return sum(b.outcome in ("acked", "failed") for b in list(self.batches))

    def run(self) -> None:
        try:
            conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=10)
        except psycopg.Error:
            return
        with conn:
            cur = conn.cursor()
            while not self.stop.is_set():
                b = random_batch(self.rng, self.schema, next(self.bids))
                b.outcome = "inflight"
                self.batches.append(b)
                try:
                    send(cur, self.schema, b)
                    b.outcome = "acked"
                except psycopg.Error as exc:
                    if conn.closed or conn.broken or exc.sqlstate is None:
                        return                  # the server died: the batch stays in flight
                    b.outcome, b.error = "failed", f"{exc.sqlstate} {exc}"


class StreamCampaign:
    def __init__(self, server: SplitstreamServer, pg_dsn: str, seed: int, *, views: int = 6,
                 strict: set[str] | None = None, verbose: bool = False, tally: known.Tally | None = None,
                 stats: dict[str, int] | None = None) -> None:
        self.server, self.seed, self.verbose = server, seed, verbose
        self.rng = random.Random(seed)
        self.schema = random_stream(self.rng, f"sf{seed}")
        self.n_views = views
        self.views: list[View] = []
        self.refused: list[str] = []
        self.entries = known.load(KNOWN_FILE)
        self.strict = strict or set()
        self.tally = tally or known.Tally()
        self.bids = itertools.count(1)
        self.acked: set[int] = set()
        self.leaked: dict[str, set[int]] = {}
        self.all: dict[int, Batch] = {}
        self.stats = stats if stats is not None else new_stats()
        self.pg = psycopg.connect(pg_dsn, autocommit=True, connect_timeout=10)
        self.oracle, self.extra = f"sf{seed}_o", f"sf{seed}_x"
        self.checkpointed = False

    # -- setup -----------------------------------------------------------------
    def setup(self) -> None:
        s = self.schema
        rows = ", ".join(f"({k}, '{label}')" for k, label in s.table_rows)
        with psycopg.connect(self.server.dsn, autocommit=True) as c:
            c.execute(s.stream_ddl())   # type: ignore[arg-type]
            c.execute(f"CREATE TABLE {s.table} (k int4 PRIMARY KEY, label text)")   # type: ignore[arg-type]
            if rows:
                c.execute(f"INSERT INTO {s.table} VALUES {rows}")   # type: ignore[arg-type]
            gen = ViewGen(self.rng, s)
            for i in range(self.n_views * 2):
                if len(self.views) == self.n_views:
                    break
                v = gen.view(f"sf{self.seed}_v{i}")
                out = execute(c, f"CREATE VIEW {v.name} AS " + v.template.format(s=s.name))
                if out.failed:
                    if out.sqlstate != "0A000":
                        raise Failure(f"CREATE VIEW failed with {out.describe()}: {v.template}")
                    self.refused.append(v.template)
                else:
                    self.views.append(v)
                    self.leaked[v.name] = set()
        for sql in (f"DROP TABLE IF EXISTS {self.oracle}", f"DROP TABLE IF EXISTS {self.extra}",
                    f"DROP TABLE IF EXISTS {s.table}", s.oracle_ddl(self.oracle), s.oracle_ddl(self.extra),
                    f"CREATE TABLE {s.table} (k int4 PRIMARY KEY, label text)"):
            self.pg.execute(sql)   # type: ignore[arg-type]
        if rows:
            self.pg.execute(f"INSERT INTO {s.table} VALUES {rows}")   # type: ignore[arg-type]

    def teardown(self) -> None:
        for t in (self.oracle, self.extra, self.schema.table):
            with contextlib.suppress(psycopg.Error):
                self.pg.execute(f"DROP TABLE IF EXISTS {t}")   # type: ignore[arg-type]
        self.pg.close()

    # -- the oracle ------------------------------------------------------------
    def _load(self, table: str, batches: list[Batch]) -> None:
        cols = ", ".join(c for c, _ in self.schema.all_columns)
        with self.pg.cursor().copy(f"COPY {table} (b, {cols}) FROM STDIN") as cp:   # type: ignore[arg-type]
            for b in batches:
                for r in b.rows:
                    cp.write_row([b.bid, *(repr(v) if isinstance(v, float) else v for v in r)])

    def relation(self, extra: Iterable[int], acked: bool = True) -> str:
        cols = ", ".join(c for c, _ in self.schema.all_columns)
        ids = ", ".join(map(str, sorted(extra))) or "-1"
        own = f"SELECT {cols} FROM {self.extra} WHERE b IN ({ids})"
        return f"(SELECT {cols} FROM {self.oracle} UNION ALL {own})" if acked else f"({own})"

    def oracle_answer(self, v: View, extra: Iterable[int], acked: bool = True) -> Outcome:
        return execute(self.pg, v.template.format(s=self.relation(extra, acked)))

    def _refuses(self, v: View, bid: int, visible: set[int]) -> bool:
        """Would the view refuse the batch: PostgreSQL's query fails with a data exception over the
        rows the view holds plus the batch, or over the batch alone (a float8 overflow within the
        batch, whatever order the sums before it were added in)?"""
        for want in (self.oracle_answer(v, visible | {bid}), self.oracle_answer(v, {bid}, acked=False)):
            if want.failed and (want.sqlstate or "").startswith("22"):
                return True
        return self._float_overflow_possible(v, self.all[bid])

    def _float_overflow_possible(self, v: View, b: Batch) -> bool:
        """The view sums a float8 column and the batch brings a huge or infinite value there: whether
        the sum overflows depends on the order of additions and on which thread-local state took
        which rows (float-overflow-order), so PostgreSQL's order cannot tell."""
        for i, (name, typ) in enumerate(self.schema.columns, start=1):
            if typ == "float8" and re.search(rf"(sum|avg)\([^)]*a\.{name}\b", v.template):
                if any(_huge(r[i]) for r in b.rows):
                    return True
        return False

    # -- rounds ----------------------------------------------------------------
    def run(self, kills: int) -> known.Tally:
        self.setup()
        try:
            for rnd in range(kills):
                self.round(rnd)
        finally:
            self.teardown()
        return self.tally

    def _restart(self, rnd: int, current: list[Batch]) -> None:
        try:
            self.server.start(timeout=120)
        except RuntimeError as exc:
            if "could not open the data directory" not in str(exc):
                raise
            # a batch a view refused, or one in flight that a view was refusing when the server died
            refused = [b for b in [*self.all.values(), *current] if b.outcome in ("failed", "inflight") and b.bad is None]
            detail = (f"round {rnd}: the server cannot open its data directory after the kill "
                      f"({str(exc).strip().splitlines()[-1]}); batches refused by a view or in flight: "
                      + ", ".join(f"{b.bid} ({b.error or b.outcome})" for b in refused[-3:]))
            if not refused or not re.search(r"out of range|overflow|division by zero", str(exc)):
                raise Failure(detail) from None     # recovery failed for another reason than a view's refusal
            self._difference("refused-batch-replayed", detail)
            raise Unrecoverable(detail) from None

    def round(self, rnd: int) -> None:
        rng = self.rng
        writers = [Writer(self.server.dsn, self.schema, random.Random(rng.random()), self.bids) for _ in range(WRITERS)]
        for w in writers:
            w.start()
        deadline = time.monotonic() + 60    # a few batches each first (after a restart the first compiles the views)
        while time.monotonic() < deadline and any(w.finished() < MIN_BATCHES and w.is_alive() for w in writers):
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 1.0))
        self.checkpointed = rng.random() < 0.2
        if self.checkpointed:
            with contextlib.suppress(psycopg.Error), psycopg.connect(self.server.dsn, autocommit=True) as c:
                c.execute("CHECKPOINT")
            time.sleep(rng.uniform(0.0, 0.1))
        quiet = rnd % 4 == 3
        if quiet:   # stop the writers, check with nothing in flight, then kill an idle server
            for w in writers:
                w.stop.set()
                w.join(timeout=60)
            self.settle([b for w in writers for b in w.batches], f"round {rnd} (quiet, before the kill)")
            self.stats["quiet_checks"] += 1
        self.server.kill()
        self.stats["kills"] += 1
        for w in writers:
            w.join(timeout=60)
            if w.is_alive():
                raise Failure(f"round {rnd}: a writer did not notice the kill")
        fresh = [b for w in writers for b in w.batches if b.bid not in self.all]
        self._restart(rnd, fresh)
        self.settle(fresh, f"round {rnd} (after the kill)")

    def settle(self, batches: list[Batch], where: str) -> None:
        """Account the batches, then check every view (all in-flight batches whole, or not at all)."""
        for b in batches:
            self.all[b.bid] = b
        new_acked = [b for b in batches if b.outcome == "acked"]
        for b in batches:
            if b.bad is not None and b.outcome == "acked":
                raise Failure(f"{where}: batch {b.bid} ({b.how}) has a bad row at {b.bad} and was acknowledged: "
                              f"{b.rows[b.bad]}")
        self._load(self.oracle, new_acked)
        # a batch with a bad row never shows (PostgreSQL could not hold it either): not a candidate
        self._load(self.extra, [b for b in batches if b.outcome in ("inflight", "failed") and b.bad is None])
        self.acked |= {b.bid for b in new_acked}
        self.stats["acked"] += len(new_acked)
        self.stats["rows_acked"] += sum(len(b.rows) for b in new_acked)
        failed = [b for b in batches if b.outcome == "failed"]
        self.stats["failed"] += len(failed)
        self.stats["bad_rows"] += sum(b.bad is not None for b in failed)
        inflight = [b for b in batches if b.outcome == "inflight" and b.bad is None]
        for b in batches:
            if b.outcome == "inflight" and b.bad is not None:
                b.outcome = "lost"
        self._check_refusals([b for b in failed if b.bad is None], where)
        self._check_views(inflight, [b for b in failed if b.bad is None], where)

    def _check_refusals(self, refused: list[Batch], where: str) -> None:
        """A batch refused for a data exception must fail PostgreSQL's query of some view too."""
        for b in refused:
            state = (b.error or "")[:5]
            if not state.startswith("22"):
                raise Failure(f"{where}: batch {b.bid} failed with {b.error}")
            if any(self.oracle_answer(v, {b.bid}).sqlstate == state for v in self.views):
                continue
            kind = "float-overflow-order" if "value out of range: overflow" in (b.error or "") else "refused-without-cause"
            self._difference(kind, f"{where}: splitstream refused batch {b.bid} ({b.how}, "
                             f"{len(b.rows)} rows) with {b.error}, but no view's query fails on PostgreSQL over it")

    def _read_views(self) -> dict[str, Outcome]:
        with psycopg.connect(self.server.dsn, autocommit=True, connect_timeout=30) as c:
            return {v.name: execute(c, f"SELECT * FROM {v.name}") for v in self.views}

    def _check_views(self, inflight: list[Batch], refused: list[Batch], where: str) -> None:
        got = self._read_views()
        self._drop_views_failing_as_postgresql(got, inflight, where)
        for o in got.values():
            if o.failed:
                raise Failure(f"{where}: reading a view failed: {o.describe()}")
        for n in range(len(inflight) + 1):
            for chosen in itertools.combinations([b.bid for b in inflight], n):
                if all(self._matches(got[v.name], v, set(chosen) | self.leaked[v.name]) for v in self.views):
                    self._decide(inflight, set(chosen))
                    self.tally.compared += len(self.views)
                    self.tally.agreed += len(self.views)
                    return
        self._explain(got, inflight, refused, where)

    def _matches(self, got: Outcome, v: View, extra: set[int]) -> bool:
        want = self.oracle_answer(v, extra)
        return not want.failed and not differences(got, want, ordered=False, check_status=False)

    def _decide(self, inflight: list[Batch], visible: set[int]) -> None:
        for b in inflight:
            if b.bid in visible:
                b.outcome = "acked"
                self.acked.add(b.bid)
                self.stats["inflight_kept"] += 1
            else:
                b.outcome = "lost"
                self.stats["inflight_lost"] += 1
        keep = ", ".join(map(str, sorted(visible))) or "-1"
        cols = ", ".join(c for c, _ in self.schema.all_columns)
        self.pg.execute(f"INSERT INTO {self.oracle} (b, {cols}) SELECT b, {cols} FROM {self.extra} "   # type: ignore[arg-type]
                        f"WHERE b IN ({keep})")

    def _explain(self, got: dict[str, Outcome], inflight: list[Batch], refused: list[Batch], where: str) -> None:
        """No set of whole in-flight batches explains every view: classify what a known finding explains
        (a view answering where PostgreSQL's query fails; a batch some views refused and others kept),
        fail on anything else."""
        if self._drop_views_missing_errors(got, where):
            self._check_views(inflight, refused, where)
            return
        pool = [b.bid for b in inflight + refused]
        per_view: dict[str, set[int]] = {}
        for v in self.views:
            for n in range(min(len(pool), 4) + 1):
                hit = next((set(c) for c in itertools.combinations(pool, n)
                            if self._matches(got[v.name], v, set(c) | self.leaked[v.name])), None)
                if hit is not None:
                    per_view[v.name] = hit
                    break
        inflight_ids = {b.bid for b in inflight}
        if len(per_view) == len(self.views):
            everywhere = set.intersection(*per_view.values()) & inflight_ids if per_view else set()
            leaks = {name: ids - everywhere for name, ids in per_view.items() if ids - everywhere}
            if self._all_refused_elsewhere(leaks, everywhere, {b.bid for b in refused}):
                errors = {b.bid: b.error or "in flight" for b in inflight + refused}
                self._difference("multi-view-atomicity", f"{where}: batches visible in some views only: "
                                 + "; ".join(f"{name} shows {sorted(ids)}" for name, ids in leaks.items())
                                 + " (" + "; ".join(f"batch {b}: {errors[b]}" for b in sorted(set().union(*leaks.values()))) + ")")
                for name, ids in leaks.items():
                    self.leaked[name] |= ids
                self._decide(inflight, everywhere)
                return
        lines = [f"{where}: no set of whole in-flight batches {sorted(inflight_ids)} explains every view "
                 f"({len(self.acked)} acknowledged batches; CHECKPOINT this round: {self.checkpointed})"]
        lines += [f"  batch {b.bid}: {b.how}, {len(b.rows)} rows, {b.outcome} {b.error or ''}".rstrip()
                  for b in inflight + refused]
        for v in self.views:
            if v.name not in per_view:
                want = self.oracle_answer(v, self.leaked[v.name])
                lines.append(f"  {v.name}: {v.template}\n    {'; '.join(differences(got[v.name], want, ordered=False, check_status=False))}"
                             f"\n    splitstream: {got[v.name].describe()}\n    oracle (acknowledged): {want.describe()}")
            else:
                lines.append(f"  {v.name} shows in-flight or failed batches {sorted(per_view[v.name])}")
        raise Failure("\n".join(lines))

    def _all_refused_elsewhere(self, leaks: dict[str, set[int]], everywhere: set[int], refused: set[int]) -> bool:
        """Did the statement of every batch that only some views show fail (refused: splitstream said so,
        and _check_refusals judged why), or would it have (in flight: one of the views that do not show
        it would refuse it, see _refuses)?"""
        for bid in (set().union(*leaks.values()) if leaks else set()) - refused:
            lacking = [v for v in self.views if bid not in leaks.get(v.name, set())]
            if not any(self._refuses(v, bid, self.leaked[v.name] | everywhere) for v in lacking):
                return False        # no view had a reason to refuse it: a crash lost part of it
        return True

    def _drop_views_failing_as_postgresql(self, got: dict[str, Outcome], inflight: list[Batch], where: str) -> None:
        """A view whose read fails with a data exception (a float8 sum that
        overflowed when batches merged: the state keeps the mark, and every read
        fails as the query over all rows does) agrees with PostgreSQL when its
        query over the acknowledged rows (with or without the in-flight batches)
        fails the same way; it can never answer again, so it leaves the campaign.
        Otherwise the order of additions decided it (float-overflow-order)."""
        for v in list(self.views):
            o = got[v.name]
            state = o.sqlstate or ""
            if not (o.failed and state.startswith("22")):
                continue
            everything = {b.bid for b in inflight}
            same = any(self.oracle_answer(v, self.leaked[v.name] | extra).sqlstate == state
                       for extra in (set(), everything))
            if not same:
                kind = "float-overflow-order" if "overflow" in (o.describe() or "") else "view-read-error"
                self._difference(kind, f"{where}: reading {v.name} ({v.template}) failed with {o.describe()}, "
                                       "PostgreSQL's query over the acknowledged rows does not")
            self.views.remove(v)
            del got[v.name]
            with psycopg.connect(self.server.dsn, autocommit=True, connect_timeout=30) as c:
                c.execute(f"DROP VIEW {v.name}")   # type: ignore[arg-type]

    def _drop_views_missing_errors(self, got: dict[str, Outcome], where: str) -> bool:
        """Views that answer where PostgreSQL's query over the acknowledged rows fails with a data
        exception: a known finding; such a view can never match again, so it leaves the campaign."""
        dropped = False
        for v in list(self.views):
            want = self.oracle_answer(v, self.leaked[v.name])
            if want.failed and (want.sqlstate or "").startswith("22") and not got[v.name].failed:
                self._difference("view-missed-data-exception", f"{where}: {v.name} ({v.template}) answers "
                                 f"{got[v.name].describe()}, PostgreSQL's query fails: {want.describe()}")
                self.views.remove(v)
                with psycopg.connect(self.server.dsn, autocommit=True, connect_timeout=30) as c:
                    c.execute(f"DROP VIEW {v.name}")   # type: ignore[arg-type]  # or it goes on refusing batches
                dropped = True
        return dropped

    def _difference(self, kind_id: str, detail: str) -> None:
        entry = self.tally.classify(self.entries, self.strict, "any", kind_id, None, None, detail)
        if entry is None or (entry.status == "expected-fix" and (entry.id in self.strict or "all" in self.strict)):
            raise Failure(detail)
        if self.verbose:
            print(f"known {entry.id}: {detail}", file=sys.stderr, flush=True)


def new_stats() -> dict[str, int]:
    return {"kills": 0, "quiet_checks": 0, "acked": 0, "failed": 0, "bad_rows": 0,
            "inflight_kept": 0, "inflight_lost": 0, "rows_acked": 0, "fresh_data_dirs": 0, "views": 0}


def run_campaign(make_server: Callable[[], SplitstreamServer], pg_dsn: str, seed: int, kills: int, *,
                 views: int = 6, strict: set[str] | None = None, verbose: bool = False
                 ) -> tuple[known.Tally, dict[str, int]]:
    """``kills`` kill points; when the server cannot recover (a known finding), a fresh data directory
    and a fresh random schema (seed, epoch) take over for the remaining kill points. Raises Failure."""
    tally, stats = known.Tally(), new_stats()
    epoch = 0
    while stats["kills"] < kills:
        camp = StreamCampaign(make_server(), pg_dsn, seed * 1000 + epoch, views=views, strict=strict,
                              verbose=verbose, tally=tally, stats=stats)
        epoch += 1
        try:
            camp.run(kills - stats["kills"])
            stats["views"] += len(camp.views)
        except Unrecoverable:
            stats["fresh_data_dirs"] += 1
            stats["views"] += len(camp.views)
    return tally, stats


@contextlib.contextmanager
def private_servers() -> Iterator[tuple[Callable[[], SplitstreamServer], str]]:
    """A throwaway PostgreSQL 15, and a factory of splitstream servers on fresh data dirs; all stopped afterwards."""
    pg = Postgres15().start()
    servers: list[SplitstreamServer] = []

    def make() -> SplitstreamServer:
        srv = SplitstreamServer(Path(tempfile.mkdtemp(prefix="splitstream-streamfuzz-")) / "data")
        servers.append(srv)
        return srv.start()

    try:
        yield make, pg.dsn
    finally:
        for srv in servers:
            srv.stop()
        pg.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kills", type=int, default=20, help="kill -9 points (rounds)")
    ap.add_argument("--views", type=int, default=6)
    ap.add_argument("--strict", help="comma-separated expected-fix ids to fail on ('all')")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    with private_servers() as (make, pg_dsn):
        try:
            tally, stats = run_campaign(make, pg_dsn, args.seed, args.kills, views=args.views,
                                        strict=known.strict_ids(args.strict), verbose=args.verbose)
        except Failure as exc:
            print(f"streamfuzz seed {args.seed}: FAILED\n{exc}", file=sys.stderr)
            return 1
    print(f"streamfuzz seed {args.seed}: {tally.summary()}\n  {stats}\n  {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
