"""Run generated queries on splitstream and PostgreSQL and collect every
disagreement (not only the first: a run is a triage list).
"""
from __future__ import annotations

from dataclasses import dataclass

import psycopg

from tests.support.diff import differences, execute

from .queries import Query, QueryGen
from .schema import setup_statements, teardown_statements

#: the session time zone per seed: UTC and two zones with daylight saving
ZONES = ("UTC", "Europe/Berlin", "America/New_York")


@dataclass(frozen=True)
class Disagreement:
    """One query the servers answered differently, with both outcomes."""

    seed: int
    index: int
    query: Query
    problems: list[str]
    splitstream: str
    postgresql: str

    def report(self) -> str:
        lines = [f"seed {self.seed} #{self.index} [{self.query.shape}] {self.query.sql}"]
        lines += [f"  - {p}" for p in self.problems]
        lines += [f"  splitstream: {self.splitstream}", f"  postgresql:  {self.postgresql}"]
        return "\n".join(lines)


def load(conns: list[psycopg.Connection], prefix: str) -> None:
    """Create and fill the tables on every connection; fails loudly if a server refuses."""
    for conn in conns:
        for stmt in setup_statements(prefix):
            conn.execute(stmt)  # type: ignore[arg-type]


def unload(conns: list[psycopg.Connection], prefix: str) -> None:
    for conn in conns:
        for stmt in teardown_statements(prefix):
            conn.execute(stmt)  # type: ignore[arg-type]


def set_zone(conns: list[psycopg.Connection], seed: int) -> str:
    zone = ZONES[seed % len(ZONES)]
    for conn in conns:
        conn.execute(f"SET TimeZone = '{zone}'")  # type: ignore[arg-type]
    return zone


def run_seed(ss: psycopg.Connection, pg: psycopg.Connection, seed: int, count: int,
             prefix: str) -> tuple[int, list[Disagreement]]:
    """Generate ``count`` queries for ``seed`` and compare them; returns (run, disagreements)."""
    set_zone([ss, pg], seed)
    found = []
    queries = QueryGen(seed, prefix).queries(count)
    for i, q in enumerate(queries):
        a, b = execute(ss, q.sql), execute(pg, q.sql)
        problems = differences(a, b, q.ordered)
        if problems:
            found.append(Disagreement(seed, i, q, problems, a.describe(), b.describe()))
    return len(queries), found
