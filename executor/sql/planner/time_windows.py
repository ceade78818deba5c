"""TUMBLE and HOP in FROM (RisingWave's window table functions; Flink's
``TABLE(TUMBLE(TABLE s, DESCRIPTOR(ts), ...))`` is rewritten to them by the
dialect): the relation's rows with ``window_start`` and ``window_end``.

Why plain operators: a window is one more column, so a GROUP BY over it is
one more group key (the pane) and a continuous view maintains it with the
same stream pipeline, backends, checkpoints and Spark pushdown as any key.

* TUMBLE: a Project adding the pane bounds (``WindowBound``).
* HOP: each row is assigned to its ``ceil(size / slide)`` panes by a cross
  join with the hop indexes 0..k-1 (a static build side, which the stream
  probes), then the same Project and, when size is not a multiple of
  slide, a Filter keeping the panes that hold the row.  Rows are expanded at
  insert time rather than slide-wide panes combined at read time: the
  user's aggregates then need no partial-state rewrite, and a read is the
  plain upper plan.

Over a table the same plan is an ordinary query (as RisingWave's table
functions); DuckDB/PostgreSQL's ``date_bin`` is the oracle.
"""
from __future__ import annotations

import math

from sqlglot import exp

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Batch
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (
    FEATURE_NOT_SUPPORTED,
    INVALID_PARAMETER_VALUE,
    UNDEFINED_FUNCTION,
    WRONG_OBJECT_TYPE,
    PgError,
)

from ...execution import expr, operators
from ...execution.time_windows import DAY_US, SessionBound, SessionProject, WindowBound, is_time
from ..binder import ExprBinder, Scope, ScopeCol, func_args, ident
from ..table_functions import table_function
from .base import PlannerBase

WINDOW_FUNCTIONS = ("tumble", "hop", "session")
_ARITY = {"tumble": (3, 4), "hop": (4, 5), "session": (3, 3)}
_SHAPES = {"tumble": "(stream, time_col, size [, offset])", "hop": "(stream, time_col, slide, size [, offset])",
           "session": "(stream, time_col, gap)"}


def interval_us(value, what: str, fn: str) -> int:
    """An interval argument in microseconds (days as 24 hours); months refused,
    a width <= 0 refused with 22023."""
    if value.months:
        raise PgError(FEATURE_NOT_SUPPORTED, f"{fn.upper()} {what} cannot contain months or years",
                      hint="Use days, hours, minutes or seconds (a month has no fixed length).")
    return value.days * DAY_US + value.microseconds


class WindowPlanner(PlannerBase):
    """TUMBLE(rel, ts, size [, offset]), HOP(rel, ts, slide, size [, offset]) and SESSION(rel, ts, gap)."""

    def plan_time_window(self, fn, alias, colaliases, outer, corr) -> tuple[operators.Op, Scope]:
        name = str(fn.this).lower()
        args = func_args(fn)
        low, high = _ARITY[name]
        if not low <= len(args) <= high or not isinstance(args[0], (exp.Column, exp.Table)):
            raise PgError(UNDEFINED_FUNCTION, f"function {name} with {len(args)} arguments does not exist",
                          hint=f"Write {name.upper()}{_SHAPES[name]} in FROM, the first argument a stream or table.")
        rel_name, schema = _relation_name(args[0])
        op, scope = self.plan_named(rel_name, schema, alias or rel_name, [], outer, corr)  # type: ignore[attr-defined]
        ts = ExprBinder(self, scope).bind(args[1])
        consts = [self._interval_arg(a, name) for a in args[2:]]
        if not is_time(ts.oid):
            types = ", ".join(["record", sqltypes.format_type(ts.oid)] + ["interval"] * len(consts))
            raise PgError(UNDEFINED_FUNCTION, f"function {name}({types}) does not exist",
                          hint="No function matches the given name and argument types. The time column must be "
                               "a timestamp, timestamptz or date; you might need to add an explicit type cast.")
        if ts.oid == type_oids.DATE:
            ts = self.coerce(ts, type_oids.TIMESTAMP)  # type: ignore[attr-defined]
        if name == "session":
            return self._session(op, scope, ts, consts[0], alias or rel_name, colaliases, outer)
        if name == "tumble":
            size = interval_us(consts[0], "window size", name)
            slide = size
            offset = interval_us(consts[1], "offset", name) if len(consts) > 1 else 0
        else:
            slide = interval_us(consts[0], "hop size", name)
            size = interval_us(consts[1], "window size", name)
            offset = interval_us(consts[2], "offset", name) if len(consts) > 2 else 0
        _check_widths(name, size, slide)
        return self._windowed(op, scope, ts, size, slide, offset, alias or rel_name, colaliases, outer)

    def _interval_arg(self, node, fn: str):
        e = self.coerce(ExprBinder(self, Scope([])).bind(node), type_oids.INTERVAL)  # type: ignore[attr-defined]
        if not e.is_const():
            raise PgError(FEATURE_NOT_SUPPORTED, f"the sizes of {fn.upper()} must be constants",
                          hint="Write an interval literal, e.g. INTERVAL '1 minute'.")
        value = e.eval(Batch([], 1), None).to_pylist()[0]
        if value is None:
            raise PgError(INVALID_PARAMETER_VALUE, f"the sizes of {fn.upper()} cannot be NULL")
        return value

    def _session(self, op, scope, ts, gap_value, alias, colaliases, outer):
        """SESSION(stream, ts, gap): each row as the session [ts, ts + gap); a
        continuous view merges the sessions that touch (``stream/sessions.py``)."""
        gap = interval_us(gap_value, "gap", "session")
        if gap <= 0:
            raise PgError(INVALID_PARAMETER_VALUE, "SESSION gap must be greater than zero",
                          hint="Give a positive interval, e.g. INTERVAL '5 minutes'.")
        if not self._is_stream(op):  # type: ignore[attr-defined]
            raise PgError(FEATURE_NOT_SUPPORTED, "SESSION windows are computed over a stream only",
                          hint="A continuous view maintains the sessions of a stream. Over a table, number the "
                               "sessions with a window function: sum(new_session) OVER (PARTITION BY key ORDER BY ts), "
                               "new_session being ts - lag(ts) > gap.")
        oid = type_oids.TIMESTAMPTZ if ts.oid == type_oids.TIMESTAMPTZ else type_oids.TIMESTAMP
        bounds = [SessionBound(ts, 0, "start", oid), SessionBound(ts, gap, "end", oid)]
        return self._with_bounds(op, scope, bounds, alias, colaliases, outer, SessionProject)

    def _windowed(self, op, scope, ts, size, slide, offset, alias, colaliases, outer):
        hop = None
        if slide != size:                 # HOP: each row once per pane holding it
            k = math.ceil(size / slide)
            series = table_function(self, "generate_series", [expr.Const(0, type_oids.INT4),
                                                              expr.Const(k - 1, type_oids.INT4)], None, [])
            sscope = Scope([ScopeCol("?hop?", "?hop?", type_oids.INT4, hidden=True)], outer, tables=["?hop?"])
            op, scope = self.join(op, scope, series, sscope, "cross", None, outer, [])  # type: ignore[attr-defined]
            hop = expr.ColRef(len(scope.cols) - 1, type_oids.INT4, "?hop?")
        oid = type_oids.TIMESTAMPTZ if ts.oid == type_oids.TIMESTAMPTZ else type_oids.TIMESTAMP
        start = WindowBound(ts, hop, slide, offset, 0, size, "start", oid)
        end = WindowBound(ts, hop, slide, offset, size, size, "end", oid)
        if hop is not None and size % slide:
            op = operators.Filter(op, expr.Compare("<", ts, end))
        return self._with_bounds(op, scope, [start, end], alias, colaliases, outer, operators.Project)

    def _with_bounds(self, op, scope, bounds, alias, colaliases, outer, project):
        """The relation's visible columns, then ``window_start`` and ``window_end``."""
        keep = [i for i, c in enumerate(scope.cols) if c.table != "?hop?"]
        exprs: list[expr.Expr] = [expr.ColRef(i, scope.cols[i].oid, scope.cols[i].name) for i in keep] + bounds
        out, cols = [], []
        visible = 0
        for e, i in zip(exprs, keep + [-1, -2]):
            hidden = i >= 0 and scope.cols[i].hidden
            nm = scope.cols[i].name if i >= 0 else ("window_start" if i == -1 else "window_end")
            if not hidden:
                nm = colaliases[visible] if visible < len(colaliases) else nm
                visible += 1
            out.append(operators.OutCol(nm, e.oid, hidden=hidden))
            cols.append(ScopeCol(alias, nm, e.oid, hidden=hidden))
        proj = project(op, exprs, out)
        return proj, Scope(cols, outer, tables=[alias])


def _check_widths(name: str, size: int, slide: int) -> None:
    if size <= 0 or slide <= 0:
        what = "window size" if size <= 0 else "hop size"
        raise PgError(INVALID_PARAMETER_VALUE, f"{name.upper()} {what} must be greater than zero",
                      hint="Give a positive interval, e.g. INTERVAL '1 minute'.")
    if slide > size:
        raise PgError(INVALID_PARAMETER_VALUE, f"HOP slide ({_fmt(slide)}) cannot be larger than the window size "
                                               f"({_fmt(size)})",
                      hint="HOP(stream, ts, slide, size): the slide comes first and must not exceed the size; "
                           "for windows that do not overlap use TUMBLE(stream, ts, size).")


def _fmt(us: int) -> str:
    return f"{us / 1_000_000:g} seconds"


def _relation_name(node) -> tuple[str, str | None]:
    if isinstance(node, exp.Column):
        return ident(node.this), (ident(node.args["table"]) if node.args.get("table") else None)
    if isinstance(node.this, (exp.Func, exp.Anonymous)):
        raise PgError(WRONG_OBJECT_TYPE, "the first argument of a window function must name a stream or table")
    return ident(node.this), (ident(node.args["db"]) if node.args.get("db") else None)
