"""An oracle for reads of continuous views that overlap inserts.

Each insert into a stream is one statement (a multi-row INSERT or a COPY),
applied all-or-nothing.  A client records when it sent the statement and
when it got the acknowledgement; a reader records when it sent its query
and when it had the whole answer.  For one read, then:

* every batch acknowledged before the read was sent must be in it;
* no batch sent after the answer arrived can be in it;
* the batches in between (in flight) may each be in it or not, but not in
  part, and not out of order on one connection: a batch sent after an
  earlier one was acknowledged cannot be visible without it.  (That last
  rule holds for what one continuous view shows; a query over several views
  reads them one after the other, so it is only asked of single-view reads.)

The oracle tables hold every batch (the rows plus the batch id ``b``), so
the answer over any set of batches is the same query with each stream
replaced by ``(SELECT cols FROM table WHERE b IN (...))``: splitstream's
table path is the oracle.  Answers are cached per (query, set of batches).
Batches known to be visible for good (the crash test's, once recovery
decided them) can be settled into a base table scanned without the filter.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from .oracle import close, rows

#: in-flight sets up to this size are searched exhaustively when no
#: per-connection-ordered set matches (to tell an ordering anomaly from a wrong value)
EXHAUSTIVE_MAX = 10
#: per-connection-ordered candidate sets tried per read, at most
CANDIDATES_MAX = 400


@dataclass
class Insert:
    """One insert statement into a stream (all its rows, or none, become visible)."""

    bid: int
    stream: str                     # logical stream name ('s', 'r', ...)
    rows: list[tuple]
    writer: int                     # the connection sending it
    start: float = math.inf         # monotonic time before it was sent (inf: never sent)
    ack: float = math.inf           # monotonic time after it was acknowledged (inf: never)


@dataclass
class Read:
    """One query's answer and when it was asked and answered."""

    query: str                      # key of the query (see Oracle.register)
    start: float
    end: float
    rows: list[tuple]
    who: str = ""


@dataclass
class Verdict:
    ok: bool
    visible: frozenset | None = None        # the matching set of batches
    ordered: bool = True                    # the match respects per-connection order
    message: str = ""


class Oracle:
    """Oracle tables with a batch-id column, and queries rendered over any set of batches."""

    def __init__(self, cur, tables: dict[str, tuple[str, tuple[str, ...]]]) -> None:
        """``tables``: logical stream -> (oracle table name, column names)."""
        self.cur = cur
        self.tables = tables
        self.queries: dict[str, Callable[[Callable[[str], str]], str]] = {}
        self.unordered: set[str] = set()
        self.settled: frozenset = frozenset()
        self._cache: dict[tuple[str, frozenset], list[tuple]] = {}

    def create(self, types: dict[str, tuple[str, ...]]) -> None:
        for logical, (name, cols) in self.tables.items():
            spec = ", ".join(f"{c} {t}" for c, t in zip(cols, types[logical]))
            self.cur.execute(f"CREATE TABLE {name} (b int, {spec})")
            self.cur.execute(f"CREATE TABLE {name}_base ({spec})")

    def drop(self) -> None:
        for name, _ in self.tables.values():
            self.cur.execute(f"DROP TABLE IF EXISTS {name}")
            self.cur.execute(f"DROP TABLE IF EXISTS {name}_base")

    def settle(self, visible: frozenset) -> None:
        """Every loaded batch is decided: ``visible`` ones stay visible in
        every later answer (they move to the base table), the rest never
        happened.  Later ``answer`` calls must include all of ``visible``."""
        new = sorted(visible - self.settled) or [-1]
        for name, cols in self.tables.values():
            c = ", ".join(cols)
            self.cur.execute(f"INSERT INTO {name}_base ({c}) SELECT {c} FROM {name} WHERE b IN ({', '.join(map(str, new))})")
            self.cur.execute(f"DELETE FROM {name}")
        self.settled = frozenset(visible)
        self._cache.clear()

    def load(self, batches: Iterable[Insert]) -> None:
        by_stream: dict[str, list[Insert]] = {}
        for b in batches:
            by_stream.setdefault(b.stream, []).append(b)
        for logical, bs in by_stream.items():
            name, cols = self.tables[logical]
            with self.cur.copy(f"COPY {name} (b, {', '.join(cols)}) FROM STDIN") as cp:
                for b in bs:
                    for r in b.rows:
                        cp.write_row((b.bid, *r))

    def relation(self, logical: str, bids: frozenset) -> str:
        """The oracle stand-in for a stream holding exactly the batches ``bids``."""
        name, cols = self.tables[logical]
        assert self.settled <= bids, "settled batches are visible in every later answer"
        c = ", ".join(cols)
        mine = ", ".join(map(str, sorted(bids - self.settled) or [-1]))
        if not self.settled:
            return f"(SELECT {c} FROM {name} WHERE b IN ({mine}))"
        return f"(SELECT {c} FROM {name}_base UNION ALL SELECT {c} FROM {name} WHERE b IN ({mine}))"

    def register(self, key: str, render: Callable[[Callable[[str], str]], str], ordered: bool = True) -> None:
        """``render(stream_sql)``: the query's oracle text, given a function that
        turns a logical stream name into the relation standing in for it.
        ``ordered=False``: the query reads several views, so batches of one
        connection may show out of order (see the module docstring)."""
        self.queries[key] = render
        if not ordered:
            self.unordered.add(key)

    def answer(self, key: str, bids: frozenset) -> list[tuple]:
        hit = self._cache.get((key, bids))
        if hit is None:
            sql = self.queries[key](lambda logical: self.relation(logical, bids))
            hit = self._cache[(key, bids)] = rows(self.cur, sql)
        return hit

    # ------------------------------------------------------------ checking
    def check(self, read: Read, inserts: list[Insert]) -> Verdict:
        """Does the read equal the query over the acknowledged batches plus
        some set of the in-flight ones (whole batches, in connection order)?"""
        before, inflight = split(read, inserts)
        tried: set[frozenset] = set()
        for extra in ordered_candidates(inflight):
            vis = before | extra
            if vis in tried:
                continue
            tried.add(vis)
            if close(read.rows, self.answer(read.query, vis)):
                return Verdict(True, vis)
        if len(inflight) <= EXHAUSTIVE_MAX:
            for n in range(len(inflight) + 1):
                for extra in itertools.combinations([b.bid for b in inflight], n):
                    vis = before | frozenset(extra)
                    if vis not in tried and close(read.rows, self.answer(read.query, vis)):
                        return Verdict(read.query in self.unordered, vis, ordered=False, message=self._explain(
                            read, before, inflight,
                            f"only a set of batches out of connection order matches: {sorted(extra)}"))
        return Verdict(False, message=self._explain(read, before, inflight, "no set of whole in-flight batches matches"))

    def _explain(self, read: Read, before: frozenset, inflight: list[Insert], why: str) -> str:
        fl = [(b.bid, b.stream, b.writer, len(b.rows)) for b in inflight]
        acked = self.answer(read.query, before)
        everything = self.answer(read.query, before | {b.bid for b in inflight})
        return (f"{why}\nquery {read.query} ({read.who}): {self.queries[read.query](lambda s: s)}\n"
                f"acknowledged before the read: {len(before)} batches; in flight (bid, stream, writer, rows): {fl}\n"
                f" got {read.rows[:12]}\n"
                f"want (acknowledged only) {acked[:12]}\n"
                f"want (all in flight) {everything[:12]}")


def split(read: Read, inserts: list[Insert]) -> tuple[frozenset, list[Insert]]:
    """(batches that must be visible, batches that may be)."""
    before = frozenset(b.bid for b in inserts if b.ack < read.start)
    inflight = [b for b in inserts if b.start < read.end and not b.ack < read.start]
    return before, inflight


def ordered_candidates(inflight: list[Insert]) -> Iterator[frozenset]:
    """Sets of in-flight batches that respect each connection's order (a
    prefix of each connection's in-flight batches): first the cuts by
    acknowledgement time, which are what a read usually sees, then the rest."""
    by_ack = sorted(inflight, key=lambda b: (b.ack, b.start))
    for i in range(len(by_ack) + 1):
        yield frozenset(b.bid for b in by_ack[:i])
    per_writer: dict[int, list[Insert]] = {}
    for b in sorted(inflight, key=lambda b: b.start):
        per_writer.setdefault(b.writer, []).append(b)
    chains = [[bs[:i] for i in range(len(bs) + 1)] for bs in per_writer.values()]
    for n, combo in enumerate(itertools.product(*chains)):
        if n >= CANDIDATES_MAX:
            return
        yield frozenset(b.bid for part in combo for b in part)
