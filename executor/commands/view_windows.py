"""CREATE VIEW's time options: PipelineDB's ``sw``/``step_factor`` sliding
windows and ``ttl``/``ttl_column``, and the ``arrival_timestamp`` filter
that means the same as ``sw``.

``WHERE arrival_timestamp > clock_timestamp() - interval 'x'`` would be
evaluated once, at insert time, if planned as written (rows would never
leave the view).  PipelineDB defines it as the sliding window ``sw = 'x'``,
so the conjunct is taken out of the definition and the option set: both
spellings store one definition and produce one plan
(:mod:`splitstream.executor.stream.sliding`).
"""
from __future__ import annotations

import dataclasses
from typing import Any

from sqlglot import exp

from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, PgError

from ..stream.sliding import STEP_FACTOR_RANGE, interval_us

#: the options this module owns
WINDOW_OPTIONS = ("sw", "step_factor", "ttl", "ttl_column")


def take_arrival_window(query: exp.Expression) -> str | None:
    """Remove from the top-level WHERE of ``query`` the conjunct
    ``arrival_timestamp > clock_timestamp() - <interval>`` (or ``>=``, or
    written the other way round) and return the interval's text; None (and
    ``query`` untouched) when there is none."""
    where = query.args.get("where") if isinstance(query, exp.Select) else None
    if where is None:
        return None
    conjuncts = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
    for c in conjuncts:
        text = _arrival_bound(c)
        if text is None:
            continue
        rest = [x for x in conjuncts if x is not c]
        if rest:
            query.set("where", exp.Where(this=exp.and_(*[x.copy() for x in rest])))
        else:
            query.set("where", None)
        return text
    return None


def refuse_other_arrival_windows(query: exp.Expression) -> None:
    """An ``arrival_timestamp`` compared with ``clock_timestamp()`` that is not
    the top-level window (in a subquery, under OR, twice) would be evaluated
    once at insert time and never expire anything: refused, not ignored."""
    for cmp in query.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE):
        sides = (cmp.this, cmp.expression)
        if any(isinstance(x, exp.Column) and x.name.lower() == "arrival_timestamp" for x in sides) and any(
                str(a.this).lower() == "clock_timestamp" for x in sides for a in x.find_all(exp.Anonymous)):
            raise PgError(FEATURE_NOT_SUPPORTED, "a sliding window over arrival_timestamp must be a conjunct of the "
                          "view's top-level WHERE clause",
                          hint="Write arrival_timestamp > clock_timestamp() - interval '...' at the top level of the "
                               "view (one window per view), or use WITH (sw = '...').")


def _arrival_bound(c: Any) -> str | None:
    if isinstance(c, (exp.GT, exp.GTE)):
        col, bound = c.this, c.expression
    elif isinstance(c, (exp.LT, exp.LTE)):
        col, bound = c.expression, c.this
    else:
        return None
    if not (isinstance(col, exp.Column) and col.name.lower() == "arrival_timestamp"):
        return None
    if not isinstance(bound, exp.Sub):
        return None
    now, iv = bound.this, bound.expression
    if not (isinstance(now, exp.Anonymous) and str(now.this).lower() == "clock_timestamp" and not now.expressions):
        return None
    return _interval_text(iv)


def _interval_text(iv: exp.Expression) -> str | None:
    if isinstance(iv, exp.Interval) and isinstance(iv.this, exp.Literal):
        unit = iv.args.get("unit")
        return f"{iv.this.name} {unit.name}" if unit is not None else iv.this.name
    if isinstance(iv, exp.Cast) and iv.to.is_type("interval") and isinstance(iv.this, exp.Literal):
        return iv.this.name
    return None


def check_window_options(options: dict[str, str], reads_stream: bool) -> None:
    """Validate the time options among ``options`` (22023 with a hint; a
    malformed interval 22007, PostgreSQL's input error)."""
    given = [k for k in WINDOW_OPTIONS if k in options]
    if not given:
        return
    if not reads_stream:
        raise PgError(FEATURE_NOT_SUPPORTED, f'option "{given[0]}" applies to views reading a stream only',
                      hint="Read a stream in the FROM clause: a view over tables or over other continuous views "
                           "has no arrival times or groups of its own to expire.")
    if "sw" in options:
        _positive_interval("sw", options["sw"], "the length of the sliding window, e.g. sw = '5 minutes'")
        if "ttl" in options or "ttl_column" in options:
            raise PgError(INVALID_PARAMETER_VALUE, "ttl cannot be combined with sw",
                          hint="A sliding window already drops what is older than sw; use one of them.")
    if "step_factor" in options:
        _step_factor(options)
    if "ttl" in options or "ttl_column" in options:
        if "ttl" not in options or "ttl_column" not in options:
            missing = "ttl_column" if "ttl" in options else "ttl"
            raise PgError(INVALID_PARAMETER_VALUE, f'option "{missing}" is required with '
                          f'"{"ttl" if missing == "ttl_column" else "ttl_column"}"',
                          hint="Give both: WITH (ttl = '1 hour', ttl_column = 'minute'), ttl_column naming a "
                               "timestamp column the view groups by.")
        _positive_interval("ttl", options["ttl"], "how long a group is kept after its ttl_column, e.g. ttl = '1 hour'")


def _positive_interval(name: str, text: str, what: str) -> None:
    try:
        us = interval_us(text)
    except PgError as e:            # 22007, PostgreSQL's input error, naming the option
        raise dataclasses.replace(e, hint=f"{name} is an interval: {what}.") from None
    if us <= 0:
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for option "{name}": "{text}"',
                      hint=f"{name} must be a positive interval: {what}.")


def _step_factor(options: dict[str, str]) -> None:
    text = options["step_factor"]
    if "sw" not in options:
        raise PgError(INVALID_PARAMETER_VALUE, 'option "step_factor" requires "sw"',
                      hint="step_factor sets the step of a sliding window as a percentage of sw; add sw = '<interval>'.")
    lo, hi = STEP_FACTOR_RANGE
    try:
        v = int(text.strip())
    except ValueError:
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for integer option "step_factor": {text}',
                      hint=f"step_factor is an integer percentage of sw between {lo} and {hi}.") from None
    if not lo <= v <= hi:
        raise PgError(INVALID_PARAMETER_VALUE, f'value {v} out of bounds for option "step_factor"',
                      detail=f'Valid values are between "{lo}" and "{hi}".',
                      hint=f"step_factor is the step as a percentage of sw: {lo} keeps 100 panes, {hi} keeps 2.")
    options["step_factor"] = str(v)
