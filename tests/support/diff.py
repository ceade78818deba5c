"""Differential testing: run the same SQL on splitstream and on PostgreSQL 15.

PostgreSQL is the oracle. For each statement we record an :class:`Outcome` on
both servers -- either the result sets (column names, column type OIDs, rows,
command tag) or the SQLSTATE of the error -- and :func:`assert_same` reports
any difference in a readable way.

Values are compared in their *text* form, exactly as PostgreSQL prints them
(every column is loaded with psycopg's ``TextLoader``), because that is what
psql and the text protocol show users; comparing Python objects would hide
formatting bugs such as ``1.50`` vs ``1.5`` or ``t`` vs ``true``. The one
relaxation: when two texts differ but both parse as floats they are compared
with a relative tolerance of 1e-9 (float aggregation order legitimately
differs between engines).

Rows are compared as multisets unless the statement has a top-level
``ORDER BY`` (a heuristic; pass ``ordered=`` to override). An ordered
comparison is only meaningful if the ORDER BY is a total order; ties may come
back in any order on either server.

Corpus files (``*.sql``) for :func:`diff_file`
----------------------------------------------
Plain SQL. A statement ends at a line whose last character is ``;`` (unless
that ``;`` is inside a string, ``$$``-quote or ``/* comment */``), or at a
line holding only ``;;`` (not sent; handy for statements that do not end in
``;``). Comment lines between statements are ignored, except these
annotations, which apply to the next statement::

    -- ordered          compare rows in order
    -- unordered        compare rows as a multiset
    -- error            must fail on both servers, with the same SQLSTATE
    -- error 22012      ... and that SQLSTATE must be 22012
    -- skip             do not run it

Example::

    CREATE TABLE {{t}} (id int, s text);
    INSERT INTO {{t}} VALUES (1, 'a;'), (2, NULL);
    -- ordered
    SELECT * FROM {{t}}
      ORDER BY id DESC;
    -- error 22012
    SELECT 1/0;
    CREATE FUNCTION {{t}}_f() RETURNS int AS $$
      SELECT 1;
    $$ LANGUAGE sql;
    DROP TABLE {{t}};

Annotations stack (``-- ordered`` and ``-- error`` may both precede one
statement) and apply to the next statement only. ``{{key}}`` placeholders are
replaced from the ``names`` mapping given to :func:`diff_file`, so a corpus can
use unique table names on the shared session server (see the ``unique_name``
fixture). Statements run on one connection per server, in autocommit mode, in
file order; a test should drop what its corpus creates.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Literal, Mapping, Sequence

import psycopg
from psycopg.types.string import TextLoader

Protocol = Literal["simple", "extended"]

# Type OIDs below this are PostgreSQL built-ins and must agree; above it they
# are user-defined (enums, composites) and naturally differ between servers.
FIRST_USER_OID = 16384
FLOAT_REL_TOL = 1e-9
FLOAT_ABS_TOL = 1e-12

Row = tuple[str | None, ...]


@dataclass
class ResultSet:
    """One result of a statement: rows (if any) and the command tag."""

    columns: list[str] | None  # None: the command returned no rows (DDL, DML)
    type_oids: list[int] | None
    rows: list[Row] | None
    status: str | None  # command tag, e.g. "INSERT 0 3"


@dataclass
class Outcome:
    """What one statement did on one server: results, or an error."""

    statement: str
    results: list[ResultSet] = field(default_factory=list)
    sqlstate: str | None = None
    error: str | None = None  # message; also set for errors without a SQLSTATE

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def columns(self) -> list[str] | None:
        """Columns of the last result set (the common single-statement case)."""
        return self.results[-1].columns if self.results else None

    @property
    def rows(self) -> list[Row] | None:
        """Rows of the last result set."""
        return self.results[-1].rows if self.results else None

    def describe(self) -> str:
        if self.failed:
            return f"ERROR {self.sqlstate or '<no sqlstate>'}: {self.error}"
        return "; ".join(
            f"{r.status} columns={r.columns} rows={_preview(r.rows)}" if r.columns is not None
            else f"{r.status}"
            for r in self.results
        ) or "<no result>"


def _preview(rows: Sequence[Row] | None, limit: int = 5) -> str:
    if rows is None:
        return "None"
    head = ", ".join(map(repr, rows[:limit]))
    return f"[{head}{', ...' if len(rows) > limit else ''}] ({len(rows)} rows)"


# ---------------------------------------------------------------------------
# execution
# ---------------------------------------------------------------------------

def text_cursor(conn: psycopg.Connection) -> psycopg.Cursor:
    """A cursor whose every column loads as the server's text, or None for NULL.

    Loaders are registered on the cursor only, so the caller's connection keeps
    its normal adapters. OIDs not registered here (enums, user types) already
    load as str in psycopg's text format.
    """
    cur = conn.cursor()
    for info in psycopg.postgres.types:
        cur.adapters.register_loader(info.oid, TextLoader)
        if info.array_oid:
            cur.adapters.register_loader(info.array_oid, TextLoader)
    return cur


def execute(conn: psycopg.Connection, statement: str, *, protocol: Protocol = "simple") -> Outcome:
    """Run one statement and capture its outcome; never raises for SQL errors.

    ``simple`` uses the simple query protocol (and allows several
    ';'-separated statements, each giving one result set); ``extended``
    prepares the statement (Parse/Bind/Execute).
    """
    outcome = Outcome(statement=statement)
    cur = text_cursor(conn)
    try:
        if protocol == "simple":
            cur.execute(statement)  # type: ignore[arg-type]  # no params -> simple protocol
        else:
            cur.execute(statement, prepare=True)  # type: ignore[arg-type]
        while True:
            outcome.results.append(_capture(cur))
            if not cur.nextset():
                break
    except psycopg.Error as exc:
        outcome.results = []
        outcome.sqlstate = exc.sqlstate
        outcome.error = (exc.diag.message_primary or str(exc)).strip()
    finally:
        cur.close()
    return outcome


def _capture(cur: psycopg.Cursor) -> ResultSet:
    if cur.description is None:
        return ResultSet(None, None, None, cur.statusmessage)
    rows: list[Row] = [tuple(r) for r in cur.fetchall()]
    return ResultSet(
        columns=[d.name for d in cur.description],
        type_oids=[d.type_code for d in cur.description],
        rows=rows,
        status=cur.statusmessage,
    )


def run_both(
    ss_conn: psycopg.Connection,
    pg_conn: psycopg.Connection,
    statements: Iterable[str],
    *,
    protocol: Protocol = "simple",
) -> list[tuple[Outcome, Outcome]]:
    """Execute each statement on splitstream then PostgreSQL; return (ss, pg) pairs.

    Both connections should be in autocommit mode, so an error leaves nothing
    to roll back and the next statement runs normally (as in psql).
    """
    return [
        (execute(ss_conn, s, protocol=protocol), execute(pg_conn, s, protocol=protocol))
        for s in statements
    ]


def check_both(
    ss_conn: psycopg.Connection,
    pg_conn: psycopg.Connection,
    statements: Iterable[str],
    *,
    ordered: bool | None = None,
    protocol: Protocol = "simple",
    **options: bool,
) -> list[tuple[Outcome, Outcome]]:
    """run_both, then assert_same on every pair; stops at the first difference."""
    pairs = []
    for stmt in statements:
        pair = run_both(ss_conn, pg_conn, [stmt], protocol=protocol)[0]
        assert_same(pair[0], pair[1], ordered=ordered, **options)
        pairs.append(pair)
    return pairs


# ---------------------------------------------------------------------------
# comparison
# ---------------------------------------------------------------------------

class OutcomeMismatch(AssertionError):
    """splitstream and PostgreSQL disagreed about a statement."""


def assert_same(
    outcome_ss: Outcome,
    outcome_pg: Outcome,
    ordered: bool | None = None,
    *,
    check_types: bool = True,
    check_status: bool = True,
    sqlstate_class_only: bool = False,
) -> None:
    """Raise OutcomeMismatch unless the two outcomes are equivalent.

    ``ordered=None`` applies the top-level ORDER BY heuristic to the
    statement text. ``check_types`` compares built-in column type OIDs (so an
    ``int8`` count vs ``int4`` is caught); ``check_status`` compares command
    tags; ``sqlstate_class_only`` compares only the two-character SQLSTATE
    class of errors.
    """
    problems = differences(
        outcome_ss, outcome_pg, ordered,
        check_types=check_types, check_status=check_status,
        sqlstate_class_only=sqlstate_class_only,
    )
    if problems:
        raise OutcomeMismatch(
            f"splitstream differs from PostgreSQL for:\n    {outcome_pg.statement.strip()}\n"
            + "\n".join(f"  - {p}" for p in problems)
            + f"\n  splitstream: {outcome_ss.describe()}\n  postgresql:  {outcome_pg.describe()}"
        )


def differences(
    ss: Outcome,
    pg: Outcome,
    ordered: bool | None = None,
    *,
    check_types: bool = True,
    check_status: bool = True,
    sqlstate_class_only: bool = False,
) -> list[str]:
    """The list of human-readable differences (empty when the outcomes agree)."""
    if ordered is None:
        ordered = has_top_level_order_by(pg.statement)
    if ss.failed or pg.failed:
        if not (ss.failed and pg.failed):
            who = "splitstream" if ss.failed else "postgresql"
            return [f"only {who} raised an error"]
        a, b = ss.sqlstate or "", pg.sqlstate or ""
        if sqlstate_class_only:
            a, b = a[:2], b[:2]
        return [] if a and a == b else [f"SQLSTATE {ss.sqlstate} != {pg.sqlstate}"]
    if len(ss.results) != len(pg.results):
        return [f"{len(ss.results)} result sets != {len(pg.results)}"]
    problems: list[str] = []
    for i, (a, b) in enumerate(zip(ss.results, pg.results)):
        prefix = f"result {i}: " if len(ss.results) > 1 else ""
        problems += [prefix + p for p in _result_differences(a, b, ordered, check_types, check_status)]
    return problems


def _result_differences(
    ss: ResultSet, pg: ResultSet, ordered: bool, check_types: bool, check_status: bool
) -> list[str]:
    problems: list[str] = []
    if check_status and ss.status != pg.status:
        problems.append(f"command tag {ss.status!r} != {pg.status!r}")
    if (ss.columns is None) != (pg.columns is None):
        problems.append("only one side returned rows")
        return problems
    if ss.columns is None or pg.columns is None:
        return problems
    if ss.columns != pg.columns:
        problems.append(f"column names {ss.columns} != {pg.columns}")
    if check_types and ss.type_oids and pg.type_oids:
        for name, a, b in zip(pg.columns, ss.type_oids, pg.type_oids):
            if a != b and a < FIRST_USER_OID and b < FIRST_USER_OID:
                problems.append(f"column {name!r} type oid {a} != {b}")
    problems += _rows_differences(ss.rows or [], pg.rows or [], ordered)
    return problems


def _rows_differences(ss_rows: list[Row], pg_rows: list[Row], ordered: bool) -> list[str]:
    if len(ss_rows) != len(pg_rows):
        problems = [f"{len(ss_rows)} rows != {len(pg_rows)} rows"]
    else:
        problems = []
    if ordered:
        for i, (a, b) in enumerate(zip(ss_rows, pg_rows)):
            if not rows_equal(a, b):
                problems.append(f"first differing row #{i}: {a!r} != {b!r} (ordered)")
                break
        return problems
    only_ss, only_pg = _multiset_difference(ss_rows, pg_rows)
    if only_ss:
        problems.append(f"rows only in splitstream: {_preview(only_ss, 10)}")
    if only_pg:
        problems.append(f"rows only in postgresql: {_preview(only_pg, 10)}")
    return problems


def _multiset_difference(a_rows: list[Row], b_rows: list[Row]) -> tuple[list[Row], list[Row]]:
    """Rows of a not matched in b, and vice versa, with float tolerance.

    Exact text matches are paired first (fast, and almost always all of them);
    the remainder is paired greedily with the tolerant comparison.
    """
    remaining: dict[Row, int] = {}
    for r in b_rows:
        remaining[r] = remaining.get(r, 0) + 1
    leftover_a: list[Row] = []
    for r in a_rows:
        if remaining.get(r, 0) > 0:
            remaining[r] -= 1
        else:
            leftover_a.append(r)
    leftover_b = [r for r, n in remaining.items() for _ in range(n)]
    unmatched_a: list[Row] = []
    for r in leftover_a:
        for j, s in enumerate(leftover_b):
            if rows_equal(r, s):
                del leftover_b[j]
                break
        else:
            unmatched_a.append(r)
    return unmatched_a, leftover_b


def rows_equal(a: Row, b: Row) -> bool:
    return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))


def values_equal(a: str | None, b: str | None) -> bool:
    """Text equality, relaxed to a 1e-9 relative tolerance for two floats."""
    if a == b:
        return True
    if a is None or b is None:
        return False
    fa, fb = _as_float(a), _as_float(b)
    if fa is None or fb is None:
        return False
    if math.isnan(fa) and math.isnan(fb):
        return True
    return math.isclose(fa, fb, rel_tol=FLOAT_REL_TOL, abs_tol=FLOAT_ABS_TOL)


def _as_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


# ---------------------------------------------------------------------------
# ORDER BY heuristic
# ---------------------------------------------------------------------------

_SKIP = re.compile(
    r"""
      '(?:[^']|'')*'                 # string literal
    | "(?:[^"]|"")*"                 # quoted identifier
    | \$(?P<tag>[A-Za-z_]*)\$.*?\$(?P=tag)\$   # dollar-quoted string
    | --[^\n]*                       # line comment
    | /\*.*?\*/                      # block comment (not nested)
    """,
    re.VERBOSE | re.DOTALL,
)
_ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)


def has_top_level_order_by(statement: str) -> bool:
    """True if the statement's outermost query has ORDER BY.

    Literals, comments and anything inside parentheses (subqueries, window
    specifications, aggregate ``ORDER BY``) are blanked out first, so only an
    ORDER BY that determines the result order counts.
    """
    text = _SKIP.sub(" ", statement)
    flat: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            flat.append(ch)
            continue
        flat.append(" ")
    return bool(_ORDER_BY.search("".join(flat)))


# ---------------------------------------------------------------------------
# corpus files
# ---------------------------------------------------------------------------

@dataclass
class Case:
    """One statement of a corpus file, with its annotations."""

    statement: str
    line: int
    ordered: bool | None = None
    expect_error: bool = False
    expect_sqlstate: str | None = None
    skip: bool = False


_ANNOTATION = re.compile(
    r"^--\s*(ordered|unordered|error|skip)(?:\s+([0-9A-Z]{5}))?\s*$", re.IGNORECASE
)


_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$")


def inside_quote(sql: str) -> bool:
    """True if the text ends inside a string, quoted identifier, dollar quote
    or block comment -- i.e. a ';' at its end does not end the statement."""
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"":
            j = i + 1
            while True:
                j = sql.find(c, j)
                if j < 0:
                    return True
                if sql.startswith(c + c, j):  # doubled quote is an escaped quote
                    j += 2
                    continue
                break
            i = j + 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            if j < 0:
                return True
            i = j + 2
        elif c == "$" and (m := _DOLLAR_TAG.match(sql, i)):
            j = sql.find(m.group(0), m.end())
            if j < 0:
                return True
            i = j + len(m.group(0))
        else:
            i += 1
    return False


def parse_corpus(text: str, names: Mapping[str, str] | None = None) -> list[Case]:
    """Split corpus text into cases (format in the module docstring)."""
    for key, value in (names or {}).items():
        text = text.replace("{{" + key + "}}", value)
    cases: list[Case] = []
    pending = Case(statement="", line=0)
    buf: list[str] = []
    start = 0

    def flush() -> None:
        nonlocal pending, buf
        stmt = "\n".join(buf).strip()
        if stmt:
            pending.statement, pending.line = stmt, start
            cases.append(pending)
            pending = Case(statement="", line=0)
        buf = []

    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not buf:
            if not line:
                continue
            m = _ANNOTATION.match(line)
            if m:
                word, arg = m.group(1).lower(), m.group(2)
                if word == "ordered":
                    pending.ordered = True
                elif word == "unordered":
                    pending.ordered = False
                elif word == "skip":
                    pending.skip = True
                else:
                    pending.expect_error = True
                    pending.expect_sqlstate = arg.upper() if arg else None
                continue
            if line.startswith("--"):
                continue
            start = lineno
        if line == ";;":
            flush()
            continue
        buf.append(raw)
        if line.endswith(";") and not inside_quote("\n".join(buf)):
            flush()
    flush()
    return cases


def diff_file(
    path: str | Path,
    ss_conn: psycopg.Connection,
    pg_conn: psycopg.Connection,
    *,
    names: Mapping[str, str] | None = None,
    protocol: Protocol = "simple",
    **options: bool,
) -> list[tuple[Outcome, Outcome]]:
    """Run a corpus file on both servers, asserting agreement statement by statement.

    Stops at the first difference with an OutcomeMismatch naming the file and
    line. ``options`` are passed to :func:`assert_same`.
    """
    path = Path(path)
    pairs: list[tuple[Outcome, Outcome]] = []
    for case in parse_corpus(path.read_text(encoding="utf-8"), names):
        if case.skip:
            continue
        ss, pg = run_both(ss_conn, pg_conn, [case.statement], protocol=protocol)[0]
        where = f"{path.name}:{case.line}"
        if case.expect_error:
            for who, o in (("postgresql", pg), ("splitstream", ss)):
                if not o.failed:
                    raise OutcomeMismatch(f"{where}: expected an error from {who}, got {o.describe()}")
                if case.expect_sqlstate and o.sqlstate != case.expect_sqlstate:
                    raise OutcomeMismatch(
                        f"{where}: expected SQLSTATE {case.expect_sqlstate} from {who}, got {o.describe()}"
                    )
        try:
            assert_same(ss, pg, case.ordered, **options)
        except OutcomeMismatch as exc:
            raise OutcomeMismatch(f"{where}: {exc}") from None
        pairs.append((ss, pg))
    return pairs
