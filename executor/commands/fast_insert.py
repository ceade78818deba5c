"""A parse shortcut for multi-row ``INSERT ... VALUES`` of literals.

Clients that batch inserts (JDBC's reWriteBatchedInserts, ORMs, load
scripts) send thousands of literal rows in one statement; running sqlglot
over all of them cost ~1 ms per row.  Here only the first row goes through
the real parser (which builds and checks the statement); the remaining rows
are tokenised with one regular expression and bound as constants.  Anything
unusual (expressions, casts, functions, RETURNING, ON CONFLICT) falls back to
the normal path by returning None.
"""
from __future__ import annotations

import decimal
import re
from typing import cast

import numpy as np
from sqlglot import exp

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids

from ..execution import expr
from ..sql.dialect import parse_one
from .dml import InsertStmt

_HEAD = re.compile(r"\s*insert\s+into\s+(?P<target>[\w.\"]+\s*(?:\([^()]*\))?)\s*values\s*", re.I | re.S)
_TOKEN = re.compile(r"""\s*(?:(?P<str>[Ee]?'(?:[^']|'')*')|(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)(?![\w.])
                       |(?P<param>\$\d+)|(?P<kw>null|true|false|default)\b|(?P<punct>[(),;]))""", re.I | re.X)


def _tokens(text: str, pos: int):
    n = len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos:].strip() == "":
                return
            raise ValueError("unsupported token")
        pos = m.end()
        yield m


def split_rows(text: str, pos: int) -> list[list[tuple[str, str]]] | None:
    """Rows of (kind, token) from position ``pos`` (just after VALUES)."""
    rows: list[list[tuple[str, str]]] = []
    row: list[tuple[str, str]] | None = None
    expect_item = False
    try:
        for m in _tokens(text, pos):
            kind = m.lastgroup
            tok = m.group(kind)
            if kind == "punct":
                if tok == "(" and row is None:
                    row, expect_item = [], True
                elif tok == "," and row is not None and not expect_item:
                    expect_item = True
                elif tok == ")" and row is not None and not expect_item:
                    rows.append(row)
                    row = None
                elif tok == "," and row is None and rows:
                    continue
                elif tok == ";" and row is None:
                    continue
                else:
                    return None
            else:
                if row is None or not expect_item:
                    return None
                if tok.startswith(("E'", "e'")):
                    return None      # escape strings: leave to the full parser
                row.append((kind, tok))
                expect_item = False
    except ValueError:
        return None
    if row is not None or len(rows) < 2:
        return None
    return rows


def _const(planner, kind: str, tok: str, col):
    if kind == "str":
        # left untyped: the whole column is converted at once when the rows are built
        return expr.Const(tok[1:-1].replace("''", "'"), type_oids.UNKNOWN)
    if kind == "num":
        if any(ch in tok for ch in ".eE"):
            return expr.Const(decimal.Decimal(tok), type_oids.NUMERIC)
        v = int(tok)
        oid = sqltypes.int_literal_oid(v)
        return expr.Const(decimal.Decimal(v) if oid == type_oids.NUMERIC else v, oid)
    if kind == "param":
        return planner.coerce(planner.param(int(tok[1:]) - 1), col.type_oid, col.typmod)
    low = tok.lower()
    if low == "null":
        return expr.Const(None, col.type_oid)
    if low in ("true", "false"):
        return expr.Const(low == "true", type_oids.BOOL)
    return None   # DEFAULT


_INT = r"-?\d{1,18}"
_int_values_re: dict[int, re.Pattern] = {}


def int_rows(text: str, pos: int, width: int) -> Batch | None:
    """All-integer VALUES rows of exactly ``width`` items, as columns, or None.

    The load scripts and benchmarks that batch inserts mostly send integer
    rows; one regular expression checks the whole list and numpy converts it,
    instead of a token match and a constant per value.  Each column is typed
    as its literals would be (int4 if every value fits, else int8), so the
    assignment cast to the target column raises what it would for the
    literals (e.g. 22003 for an int4 column)."""
    pat = _int_values_re.get(width)
    if pat is None:
        row = r"\(\s*" + _INT + r"(?:\s*,\s*" + _INT + "){" + str(width - 1) + r"}\s*\)"
        pat = _int_values_re[width] = re.compile(row + r"(?:\s*,\s*" + row + r")*\s*;?\s*", re.S)
    if width < 1 or pat.fullmatch(text, pos) is None:
        return None
    # validated: deleting parentheses, blanks and ';' leaves "v,v,...,v"
    flat = np.fromstring(text[pos:].translate(_DELETE), dtype=np.int64, sep=",")
    n = len(flat) // width
    grid = flat.reshape(n, width)
    cols = []
    for j in range(width):
        v = np.ascontiguousarray(grid[:, j])
        if v.min() >= -(2**31) and v.max() < 2**31:
            cols.append(Col(v.astype(np.int32), None, type_oids.INT4))
        else:
            cols.append(Col(v, None, type_oids.INT8))
    return Batch(cols, n)


_DELETE = str.maketrans("", "", "() \t\n\r\f\v;")
_FIRST = re.compile(r"\((?P<items>[^()']*)\)")


def fast_multirow_insert(session, planner, text: str):
    m = _HEAD.match(text)
    if m is None:
        return None
    stmt = None
    first = _FIRST.match(text, m.end())
    if first is not None and re.fullmatch(r"[\s\d,-]*", first.group("items")):
        stmt = InsertStmt.build(session, planner,
                                cast(exp.Insert, parse_one(f"INSERT INTO {m.group('target')} VALUES {first.group(0)}")))
        if stmt.rows is None or len(stmt.rows) != 1:
            return None
        stmt.const_batch = int_rows(text, m.end(), len(stmt.targets))
        if stmt.const_batch is not None:
            stmt.cacheable = False
            return stmt
    rows = split_rows(text, m.end())
    if rows is None:
        return None
    if stmt is None:        # (an all-integer first row was bound above already)
        first_row = "(" + ", ".join(tok for _, tok in rows[0]) + ")"
        stmt = InsertStmt.build(session, planner, cast(exp.Insert, parse_one(f"INSERT INTO {m.group('target')} VALUES {first_row}")))
        if stmt.rows is None or len(stmt.rows) != 1:
            return None
    width = len(stmt.targets)
    stmt.rows = []          # rebuild row 1 too, so each column's constants share one type
    for r in rows:
        if len(r) != width:
            return None
        stmt.rows.append([_const(planner, kind, tok, col) for (kind, tok), col in zip(r, stmt.targets)])
    stmt.cacheable = False
    return stmt
