"""SQL fuzzing campaign: random schemas, queries and DML, run on splitstream
and on PostgreSQL 15, results and SQLSTATEs compared.

    python -m tests.campaigns.sqlfuzz --seed 1 --statements 20000

starts a private PostgreSQL 15 and a splitstream server (or uses
``--ss-dsn``/``--pg-dsn``), creates a fresh random schema every
``--round`` statements, and prints the tally.  Rows compare as multisets
unless the statement orders by every output column; floats with the
tolerance of ``tests.support.diff``.  Every difference is either explained by
an entry of ``sql_known_differences.toml`` or unexpected; an internal error
(XX000) on splitstream is always unexpected.  Exit status 1 when anything
was unexpected.  After a DML statement whose outcome differs, splitstream's
tables are reloaded from PostgreSQL's so later statements compare again.
"""
from __future__ import annotations

import argparse
import contextlib
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import psycopg

from tests.campaigns import known
from tests.campaigns.sqlgen import QueryGen, Statement, Table, random_schema
from tests.support.diff import Outcome, differences, execute, text_cursor, values_equal
from tests.support.servers import Postgres15, SplitstreamServer

KNOWN_FILE = "sql_known_differences.toml"
#: oids of columns whose ties may print differently (1.0 vs 1.00, 0 vs -0)
NUMERIC_OIDS = {21, 23, 20, 700, 701, 1700}
TIMEOUT_MS = 10000
#: share of rounds whose data and literals include infinity, BC and far-future dates and timestamps
EXTREME_ROUNDS = 0.2


def session_setup(conn: psycopg.Connection) -> None:
    for sql in ("SET TimeZone = 'UTC'", "SET DateStyle = 'ISO, MDY'", "SET extra_float_digits = 1",
                f"SET statement_timeout = {TIMEOUT_MS}"):
        conn.execute(sql)


class Campaign:
    """One seed's run over two connections."""

    def __init__(self, ss_dsn: str, pg_dsn: str, seed: int, *, strict: set[str] | None = None,
                 round_size: int = 150, verbose: bool = False, prefix: str = "fz",
                 repro_dir: Path | None = None) -> None:
        self.ss_dsn, self.pg_dsn = ss_dsn, pg_dsn
        self.seed, self.round_size, self.verbose = seed, round_size, verbose
        self.prefix = f"{prefix}{seed}"
        self.entries = known.load(KNOWN_FILE)
        self.strict = strict or set()
        self.tally = known.Tally()
        self.shapes: dict[str, int] = {}
        self.tags = ""
        self.repro_dir = repro_dir
        self.ss = psycopg.connect(ss_dsn, autocommit=True, connect_timeout=10)
        self.pg = psycopg.connect(pg_dsn, autocommit=True, connect_timeout=10)
        session_setup(self.ss)
        session_setup(self.pg)

    def close(self) -> None:
        self.ss.close()
        self.pg.close()

    def run(self, statements: int) -> known.Tally:
        rng = random.Random(self.seed)
        done, rnd = 0, 0
        while done < statements:
            extremes = rng.random() < EXTREME_ROUNDS
            self.tags = "-- round: temporal-extremes\n" if extremes else ""
            tables = random_schema(rng, f"{self.prefix}_{rnd}", tables=rng.randint(2, 3), extremes=extremes)
            self._create(tables)
            gen = QueryGen(rng, tables, extremes)
            try:
                for _ in range(min(self.round_size, statements - done)):
                    self.check(gen.statement(), tables)
                    done += 1
            finally:
                self._drop(tables)
            rnd += 1
        return self.tally

    # -- schema ----------------------------------------------------------------
    def _create(self, tables: list[Table]) -> None:
        for t in tables:
            for conn in (self.ss, self.pg):
                conn.execute(f"DROP TABLE IF EXISTS {t.name}")
            for sql in (t.create_sql(), t.insert_sql()):
                if sql is None:
                    continue
                pair = execute(self.ss, sql), execute(self.pg, sql)
                if pair[1].failed:
                    raise RuntimeError(f"PostgreSQL refused the generated schema: {pair[1].describe()}\n{sql}")
                if pair[0].failed:
                    self._report("schema", Statement(sql, "dml"), pair[0], pair[1], [f"setup failed: {pair[0].describe()}"])
                    self._resync([t])       # the later tables do not exist yet

    def _drop(self, tables: list[Table]) -> None:
        for t in tables:
            for conn in (self.ss, self.pg):
                with contextlib.suppress(psycopg.Error):
                    conn.execute(f"DROP TABLE IF EXISTS {t.name}")

    def _pg_rows(self, t: Table) -> list[str]:
        """PostgreSQL's current rows of a table, as VALUES tuples of typed literals."""
        with text_cursor(self.pg) as cur:
            rows = cur.execute(f"SELECT * FROM {t.name}").fetchall()   # type: ignore[arg-type]
        return ["(" + ", ".join("NULL" if v is None else f"'{v.replace(chr(39), chr(39) * 2)}'::{typ}"
                                for v, (_, typ) in zip(r, t.columns)) + ")" for r in rows]

    def repro(self, stmt: Statement, tables: list[Table]) -> str:
        """A script that recreates the tables as PostgreSQL holds them and runs the statement."""
        lines = []
        for t in tables:
            lines.append(t.create_sql() + ";")
            values = self._pg_rows(t)
            if values:
                lines.append(f"INSERT INTO {t.name} VALUES {', '.join(values)};")
        return "\n".join(lines + [stmt.sql + ";"])

    def _resync(self, tables: list[Table]) -> None:
        """Make splitstream's tables hold PostgreSQL's rows again (after a DML difference)."""
        for t in tables:
            self.ss.execute(f"DELETE FROM {t.name}")   # type: ignore[arg-type]
            values = self._pg_rows(t)
            if values and execute(self.ss, f"INSERT INTO {t.name} VALUES {', '.join(values)}").failed:
                for v in values:    # a value splitstream cannot hold (temporal-range) stays out, the rest goes in
                    execute(self.ss, f"INSERT INTO {t.name} VALUES {v}")

    # -- one statement ---------------------------------------------------------
    def check(self, stmt: Statement, tables: list[Table]) -> None:
        self.shapes[stmt.shape] = self.shapes.get(stmt.shape, 0) + 1
        ss = self._execute_ss(stmt.sql)
        pg = execute(self.pg, stmt.sql)
        self.tally.compared += 1
        problems = differences(ss, pg, ordered=False)
        if stmt.ordered and not problems and not pg.failed:
            problems = self._order_problems(ss, pg)
        if ss.sqlstate == "XX000":
            problems = [f"internal error: {ss.error}"] + problems
        if problems and pg.failed and self._fails_at_plan_time(stmt.sql, pg.sqlstate):
            problems.append("postgresql raises it at plan time")
        if not problems:
            self.tally.agreed += 1
            return
        if self._report(self._kind(ss, pg), stmt, ss, pg, problems) and self.repro_dir is not None:
            path = self.repro_dir / f"sqlfuzz-{self.seed}-{self.tally.compared}.sql"
            path.write_text(self.repro(stmt, tables) + "\n", encoding="utf-8")
            print(f"    reproducer: {path}", file=sys.stderr, flush=True)
        if stmt.kind == "dml":
            self._resync(tables)

    def _fails_at_plan_time(self, sql: str, sqlstate: str | None) -> bool:
        """Does PostgreSQL raise the error while planning (constant folding), before any row is read?"""
        return execute(self.pg, "EXPLAIN " + sql).sqlstate == sqlstate

    def _execute_ss(self, sql: str) -> Outcome:
        try:
            return execute(self.ss, sql)
        except psycopg.OperationalError as exc:
            # the connection died: the server crashed or closed it; that is a bug of its own
            self.ss = psycopg.connect(self.ss_dsn, autocommit=True, connect_timeout=30)
            session_setup(self.ss)
            return Outcome(statement=sql, sqlstate="XX000", error=f"connection lost: {exc}")

    @staticmethod
    def _kind(ss: Outcome, pg: Outcome) -> str:
        if ss.failed and pg.failed:
            return "sqlstate"
        if ss.failed:
            return "ss-error"
        if pg.failed:
            return "pg-error"
        return "result"

    @staticmethod
    def _order_problems(ss: Outcome, pg: Outcome) -> list[str]:
        """Ordered comparison where rows tied under the sort (1.0 vs 1.00) may come in either order."""
        oids = pg.results[-1].type_oids or []
        a, b = ss.rows or [], pg.rows or []
        for i, (ra, rb) in enumerate(zip(a, b)):
            if all(values_equal(x, y) or (oid in NUMERIC_OIDS and _same_number(x, y))
                   for x, y, oid in zip(ra, rb, oids)):
                continue
            return [f"first differing row #{i}: {ra!r} != {rb!r} (ordered)"]
        return []

    def _report(self, kind: str, stmt: Statement, ss: Outcome, pg: Outcome, problems: list[str]) -> bool:
        """Classify and print a difference; True when it is unexpected."""
        detail = ("; ".join(problems) + f"\n    statement: {stmt.sql}\n    splitstream: {ss.describe()}"
                  f"\n    postgresql:  {pg.describe()}")
        if ss.sqlstate == "XX000":
            self.tally.unexpected.append(detail)
            entry = None
        else:
            entry = self.tally.classify(self.entries, self.strict, kind, self.tags + stmt.sql, ss.sqlstate, pg.sqlstate,
                                        detail)
        if self.verbose or entry is None:
            print(("UNEXPECTED " if entry is None else f"known {entry.id}: ") + detail, file=sys.stderr, flush=True)
        return entry is None


def _same_number(x: str | None, y: str | None) -> bool:
    if x is None or y is None:
        return x is y
    try:
        return float(x) == float(y)
    except ValueError:
        return False


@contextlib.contextmanager
def private_servers() -> Iterator[tuple[str, str]]:
    """A throwaway PostgreSQL 15 and splitstream server, stopped afterwards."""
    pg = Postgres15().start()
    ss = SplitstreamServer(Path(tempfile.mkdtemp(prefix="splitstream-sqlfuzz-")) / "data")
    try:
        ss.start()
        yield ss.dsn, pg.dsn
    finally:
        ss.stop()
        pg.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--statements", type=int, default=1000)
    ap.add_argument("--round", type=int, default=150, help="statements per random schema")
    ap.add_argument("--ss-dsn")
    ap.add_argument("--pg-dsn")
    ap.add_argument("--strict", help="comma-separated expected-fix ids to fail on ('all')")
    ap.add_argument("--verbose", action="store_true", help="print known differences too")
    ap.add_argument("--repro", type=Path, help="write a reproducer script per unexpected difference here")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    with contextlib.ExitStack() as stack:
        if args.ss_dsn and args.pg_dsn:
            ss_dsn, pg_dsn = args.ss_dsn, args.pg_dsn
        else:
            ss_dsn, pg_dsn = stack.enter_context(private_servers())
        camp = Campaign(ss_dsn, pg_dsn, args.seed, strict=known.strict_ids(args.strict),
                        round_size=args.round, verbose=args.verbose, repro_dir=args.repro)
        stack.callback(camp.close)
        tally = camp.run(args.statements)
    print(f"sqlfuzz seed {args.seed}: {tally.summary()}\n  shapes {camp.shapes}\n  {time.monotonic() - t0:.0f} s")
    return 1 if tally.unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
