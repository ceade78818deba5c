"""Values of PostgreSQL's configuration parameters, checked and spelled as
PostgreSQL's guc.c does (parse_bool, parse_int, parse_real, the enum lookup,
and _ShowOption for what SHOW prints).

Most of PostgreSQL's parameters only tune its own machinery and are inert
here, but a value PostgreSQL would refuse must be refused here too: a
``SET work_mem = 'abc'`` that succeeds is a wrong answer, and a client that
reads its setting back must see PostgreSQL's spelling (``8192kB`` -> ``8MB``).
"""
from __future__ import annotations

import math
import re

from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError

from .pg15_types import TYPES

#: unit -> (its base unit, how many base units it is), greatest first per base,
#: as guc.c's memory_unit_conversion_table and time_unit_conversion_table
_MEMORY = {"B": 1 / 1024, "kB": 1, "MB": 1024, "GB": 1024 ** 2, "TB": 1024 ** 3}
_TIME = {"us": 0.001, "ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_BASES = {"B": (_MEMORY, 1 / 1024), "kB": (_MEMORY, 1), "8kB": (_MEMORY, 8), "MB": (_MEMORY, 1024),
          "us": (_TIME, 0.001), "ms": (_TIME, 1), "s": (_TIME, 1000), "min": (_TIME, 60_000)}
_MEMORY_HINT = 'Valid units for this parameter are "B", "kB", "MB", "GB", and "TB".'
_TIME_HINT = 'Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".'
_BOOL_SPELLINGS = {"on": "on", "off": "off", "true": "on", "false": "off", "yes": "on", "no": "off",
                   "1": "on", "0": "off"}
#: enum values PostgreSQL accepts but does not list (hidden in its option tables)
_HIDDEN = {"client_min_messages": {"info": "info"}}
_INT_RE = re.compile(r"\s*([+-]?(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?))")
_REAL_RE = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf(?:inity)?|nan))", re.I)


def checked(name: str, value: str) -> str | None:
    """``value`` as SHOW would print it after ``SET name = value``, or None
    for a parameter that is not listed (strings and splitstream's own);
    raises PostgreSQL's 22023 for a value PostgreSQL refuses."""
    spec = TYPES.get(name)
    if spec is None or spec[0] == "string":
        return None
    kind, unit, lo, hi, enums, _boot = spec
    if kind == "bool":
        return _bool(name, value)
    if kind == "enum":
        return _enum(name, value, enums.split(","))
    if kind == "integer":
        return _integer(name, value, unit, int(lo), int(hi))
    return _real(name, value, unit, float(lo), float(hi))


def boot_value(name: str) -> str | None:
    """What SHOW prints for a PostgreSQL parameter never set in this session
    (its compiled-in default), or None for a name PostgreSQL does not have."""
    spec = TYPES.get(name)
    if spec is None:
        return None
    boot = spec[5]
    return checked(name, boot) if spec[0] != "string" else boot


def _invalid(name: str, value: str, hint: str | None = None) -> PgError:
    return PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "{name}": "{value}"', hint=hint)


def _bool(name: str, value: str) -> str:
    """parse_bool: any unambiguous prefix of true/false/yes/no, on/off, 1/0."""
    v = value.lower()
    if v:
        for word in ("true", "false", "yes", "no"):
            if word.startswith(v):
                return _BOOL_SPELLINGS[word]
        if len(v) >= 2:
            for word in ("on", "off"):
                if word.startswith(v):
                    return word
        if v in ("1", "0"):
            return _BOOL_SPELLINGS[v]
    raise PgError(INVALID_PARAMETER_VALUE, f'parameter "{name}" requires a Boolean value')


def _enum(name: str, value: str, listed: list[str]) -> str:
    v = value.lower()
    for option in listed:                  # matched without regard to case, shown as listed (TLSv1.2)
        if option.lower() == v:
            return option
    if v in _HIDDEN.get(name, {}):
        return _HIDDEN[name][v]
    if "on" in listed and "off" in listed and v in _BOOL_SPELLINGS:
        return _BOOL_SPELLINGS[v]          # the hidden boolean spellings of on/off enums
    raise _invalid(name, value, f"Available values: {', '.join(listed)}.")


def _number(name: str, value: str, unit: str, pattern: re.Pattern[str]) -> float:
    """The value in the parameter's base unit (parse_int/parse_real before the range check)."""
    m = pattern.match(value)
    if m is None:
        raise _invalid(name, value)
    text = m.group(1)
    try:
        number = float(int(text, 16)) if text.lower().lstrip("+-").startswith("0x") else float(text)
    except ValueError:
        raise _invalid(name, value) from None
    if math.isnan(number):
        raise _invalid(name, value)
    rest = value[m.end():].strip()
    if not rest:
        return number
    table_base = _BASES.get(unit)
    if table_base is None:
        raise _invalid(name, value)
    table, base = table_base
    factor = table.get(rest)
    if factor is None:
        raise _invalid(name, value, _MEMORY_HINT if table is _MEMORY else _TIME_HINT)
    return number * factor / base


def _integer(name: str, value: str, unit: str, lo: int, hi: int) -> str:
    n = _number(name, value, unit, _INT_RE)
    if not -2 ** 31 <= round(n) < 2 ** 31:
        raise _invalid(name, value, "Value exceeds integer range.")
    v = int(_rint(n))
    if not lo <= v <= hi:
        space = " " if unit else ""
        raise PgError(INVALID_PARAMETER_VALUE,
                      f'{v}{space}{unit} is outside the valid range for parameter "{name}" ({lo} .. {hi})')
    if v <= 0 or unit not in _BASES:
        return str(v)
    table, base = _BASES[unit]
    for u, factor in sorted(table.items(), key=lambda kv: -kv[1]):
        mult = factor / base
        if mult <= 1 or v % int(mult) == 0:
            return f"{int(_rint(v / mult))}{u}"
    return str(v)


#: an integer parameter's value as SHOW prints it (also PipelineDB's parameters with a unit)
integer_text = _integer


def _real(name: str, value: str, unit: str, lo: float, hi: float) -> str:
    v = _number(name, value, unit, _REAL_RE)
    if not lo <= v <= hi:
        space = " " if unit else ""
        raise PgError(INVALID_PARAMETER_VALUE, f'{_g(v)}{space}{unit} is outside the valid range for '
                                               f'parameter "{name}" ({_g(lo)} .. {_g(hi)})')
    if v <= 0 or unit not in _BASES:
        return _g(v)
    table, base = _BASES[unit]
    shown, shown_unit = v, unit
    for u, factor in sorted(table.items(), key=lambda kv: -kv[1]):
        shown, shown_unit = v / (factor / base), u
        if shown > 0 and abs(_rint(shown) / shown - 1.0) <= 1e-8:
            break
    return f"{_g(shown)}{shown_unit}"


def _rint(x: float) -> float:
    """C's rint: halves to even, as PostgreSQL rounds a fractional integer value."""
    return float(round(x))


def _g(x: float) -> str:
    """printf's %g."""
    return "%g" % x


def in_base_unit(vartype: str, unit: str | None, shown: str) -> str:
    """pg_settings.setting: a value as SHOW prints it (``2MB``, ``1min``) in
    the parameter's base unit (``2048`` of kB, ``60`` of s), as PostgreSQL
    lists it; a value without a unit, or of another type, as it is."""
    if vartype not in ("integer", "real") or not unit or unit not in _BASES:
        return shown
    try:
        n = _number("", shown, unit, _INT_RE if vartype == "integer" else _REAL_RE)
    except PgError:
        return shown
    return str(int(_rint(n))) if vartype == "integer" else _g(n)
