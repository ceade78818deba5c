"""Arithmetic on dates, timestamps and intervals (PostgreSQL's operators)."""
from __future__ import annotations

import calendar
import datetime as dt

from catalog.vector import Col
from protocol import oids as O
from protocol.errors import PgError

from . import expr as X

_TS = (O.TIMESTAMP, O.TIMESTAMPTZ)


def add_interval(v, iv, sign: int = 1):
    months = iv.months * sign
    if months:
        y, m = divmod(v.month - 1 + months, 12)
        y += v.year
        d = min(v.day, calendar.monthrange(y, m + 1)[1])
        v = v.replace(year=y, month=m + 1, day=d)
    return v + dt.timedelta(days=iv.days * sign, microseconds=iv.microseconds * sign)


def _elementwise(fn, oid):
    def impl(cols, n, ctx):
        a, b = cols[0].to_pylist(), cols[1].to_pylist()
        return Col.from_pylist([None if x is None or y is None else fn(x, y) for x, y in zip(a, b)], oid)

    return impl


def temporal_arith(planner, op: str, l: X.Expr, r: X.Expr) -> X.Expr | None:
    from protocol.types import Interval

    lo, ro = l.oid, r.oid
    temporal = (O.DATE, O.TIMESTAMP, O.TIMESTAMPTZ, O.INTERVAL, O.TIME)
    if lo not in temporal and ro not in temporal:
        return None
    if lo == O.UNKNOWN:
        l = planner.coerce(l, O.INTERVAL if ro in temporal and op in ("+", "-") and ro != O.INTERVAL else ro)
        lo = l.oid
    if ro == O.UNKNOWN:
        r = planner.coerce(r, O.INTERVAL if lo in (O.TIMESTAMP, O.TIMESTAMPTZ, O.TIME) or (lo == O.INTERVAL) else
                           (O.DATE if lo == O.DATE and op == "-" else O.INT4))
        ro = r.oid

    def tsv(v):
        return dt.datetime(v.year, v.month, v.day) if type(v) is dt.date else v

    if op in ("+", "-") and ro == O.INTERVAL and lo in (O.DATE, O.TIMESTAMP, O.TIMESTAMPTZ):
        sign = 1 if op == "+" else -1
        out = O.TIMESTAMP if lo == O.DATE else lo
        return X.Func("ts_interval", _elementwise(lambda a, b: add_interval(tsv(a), b, sign), out), [l, r], out)
    if op == "+" and lo == O.INTERVAL and ro in (O.DATE, O.TIMESTAMP, O.TIMESTAMPTZ):
        out = O.TIMESTAMP if ro == O.DATE else ro
        return X.Func("ts_interval", _elementwise(lambda a, b: add_interval(tsv(b), a, 1), out), [l, r], out)
    if lo == O.DATE and ro in (O.INT4, O.INT2, O.INT8) and op in ("+", "-"):
        sign = 1 if op == "+" else -1
        return X.Func("date_int", _elementwise(lambda a, b: a + dt.timedelta(days=sign * b), O.DATE), [l, r], O.DATE)
    if ro == O.DATE and lo in (O.INT4, O.INT2, O.INT8) and op == "+":
        return X.Func("date_int", _elementwise(lambda a, b: b + dt.timedelta(days=a), O.DATE), [l, r], O.DATE)
    if lo == O.DATE and ro == O.DATE and op == "-":
        return X.Func("date_diff", _elementwise(lambda a, b: (a - b).days, O.INT4), [l, r], O.INT4)
    if lo in _TS + (O.DATE,) and ro in _TS + (O.DATE,) and op == "-":
        if O.TIMESTAMPTZ in (lo, ro):
            l, r = planner.coerce(l, O.TIMESTAMPTZ), planner.coerce(r, O.TIMESTAMPTZ)
        else:
            l, r = planner.coerce(l, O.TIMESTAMP), planner.coerce(r, O.TIMESTAMP)

        def diff(a, b):
            d = a - b
            us = d.seconds * 1_000_000 + d.microseconds
            return Interval(0, d.days, us) if d.days >= 0 or us == 0 else Interval(0, d.days + 1, us - 86_400_000_000)

        return X.Func("ts_diff", _elementwise(diff, O.INTERVAL), [l, r], O.INTERVAL)
    if lo == O.INTERVAL and ro == O.INTERVAL and op in ("+", "-"):
        s = 1 if op == "+" else -1
        return X.Func("iv", _elementwise(lambda a, b: Interval(a.months + s * b.months, a.days + s * b.days,
                                                               a.microseconds + s * b.microseconds), O.INTERVAL), [l, r], O.INTERVAL)
    if lo == O.INTERVAL and ro in O.NUMERIC_TYPES and op in ("*", "/"):
        r = planner.coerce(r, O.FLOAT8)

        def scale(a, f):
            if op == "/":
                if f == 0:
                    raise PgError("22012", "division by zero")
                f = 1 / f
            months = a.months * f
            m = int(months)
            days = a.days * f + (months - m) * 30
            d = int(days)
            us = round(a.microseconds * f + (days - d) * 86_400_000_000)
            return Interval(m, d, us)

        return X.Func("iv_scale", _elementwise(scale, O.INTERVAL), [l, r], O.INTERVAL)
    if ro == O.INTERVAL and lo in O.NUMERIC_TYPES and op == "*":
        return temporal_arith(planner, "*", r, l)
    if lo == O.TIME and ro == O.INTERVAL and op in ("+", "-"):
        s = 1 if op == "+" else -1

        def tadd(a, b):
            base = dt.datetime(2000, 1, 1, a.hour, a.minute, a.second, a.microsecond)
            return (base + s * dt.timedelta(days=0, microseconds=b.microseconds)).time()

        return X.Func("time_iv", _elementwise(tadd, O.TIME), [l, r], O.TIME)
    if op == "-" and lo == ro == O.TIME:
        def tdiff(a, b):
            us = ((a.hour - b.hour) * 3600 + (a.minute - b.minute) * 60 + a.second - b.second) * 1_000_000 + a.microsecond - b.microsecond
            return Interval(0, 0, us)

        return X.Func("time_diff", _elementwise(tdiff, O.INTERVAL), [l, r], O.INTERVAL)
    raise PgError("42883", f"operator does not exist: {planner_type(lo)} {op} {planner_type(ro)}",
                  hint="No operator matches the given name and argument types. You might need to add explicit type casts.")


def planner_type(oid: int) -> str:
    from catalog.types import format_type

    return format_type(oid)
