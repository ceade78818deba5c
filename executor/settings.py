"""Validation and normalisation of SET values."""
from __future__ import annotations

import functools
import re
import zoneinfo

from splitstream.protocol.messages import REPORTED_PARAMETERS
from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError

_UNITS = {"us": 0.001, "ms": 1, "s": 1000, "min": 60000, "h": 3600000, "d": 86400000}


@functools.lru_cache(maxsize=256)  # read on every statement (statement_timeout)
def parse_duration_ms(v: str) -> int:
    m = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*([a-z]*)\s*", str(v).lower())
    if not m:
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter: "{v}"')
    num, unit = float(m.group(1)), m.group(2) or "ms"
    if unit not in _UNITS:
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter: "{v}"',
                      hint='Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".')
    return int(num * _UNITS[unit])


def _duration_ms(name: str, value: str) -> int:
    """parse_duration_ms, with PostgreSQL's message naming the parameter."""
    try:
        return parse_duration_ms(value)
    except PgError as e:
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "{name}": "{value}"', hint=e.hint) from e


def normalize_setting(name: str, value: str) -> str:
    if name in ("statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout"):
        ms = _duration_ms(name, value)
        if ms == 0:
            return "0"
        for unit, f in (("d", 86400000), ("h", 3600000), ("min", 60000), ("s", 1000)):
            if ms % f == 0:
                return f"{ms // f}{unit}"
        return f"{ms}ms"
    if name == "stream_session_timeout":
        ms = _duration_ms(name, value)
        return f"{ms}ms"
    if name == "timezone":
        v = value.strip("'")
        if v.upper() in ("UTC", "GMT", "Z"):
            return "UTC" if v.upper() != "GMT" else "GMT"

        try:
            zoneinfo.ZoneInfo(v)
        except Exception:
            raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "TimeZone": "{value}"') from None
        return v
    if name == "executor_backend":
        v = value.lower()
        if v not in ("auto", "vector", "llvm"):
            raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "executor_backend": "{value}"',
                          hint='Available values: auto, vector, llvm.')
        return v
    if name == "datestyle":
        return "ISO, MDY"
    if name == "extra_float_digits":
        return str(_int_in_range(name, value, -15, 3))
    return value


def _int_in_range(name: str, value: str, lo: int, hi: int) -> int:
    try:
        v = int(str(value).strip())
    except ValueError:
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "{name}": "{value}"') from None
    if not lo <= v <= hi:
        raise PgError(INVALID_PARAMETER_VALUE, f'{v} is outside the valid range for parameter "{name}" ({lo} .. {hi})')
    return v


def float_digits(settings: dict) -> int:
    """The session's extra_float_digits (validated when it was set)."""
    return int(settings.get("extra_float_digits", "1") or 1)


DEFAULT_SETTINGS = {
    "server_version": "15.0", "server_version_num": "150000", "server_encoding": "UTF8", "client_encoding": "UTF8",
    "datestyle": "ISO, MDY", "intervalstyle": "postgres", "timezone": "UTC", "standard_conforming_strings": "on",
    "integer_datetimes": "on", "application_name": "", "search_path": '"$user", public', "statement_timeout": "0",
    "lock_timeout": "0", "idle_in_transaction_session_timeout": "0", "extra_float_digits": "1",
    "default_transaction_isolation": "read committed", "transaction_isolation": "read committed",
    "synchronous_commit": "on", "max_connections": "100", "stream_session_timeout": "100ms",
    "executor_backend": "auto", "is_superuser": "on", "client_min_messages": "notice", "bytea_output": "hex",
    "max_identifier_length": "63", "default_transaction_read_only": "off", "transaction_read_only": "off",
    "work_mem": "4MB", "jit": "off", "lc_messages": "C", "lc_monetary": "C", "lc_numeric": "C", "lc_time": "C",
    "lc_collate": "C", "lc_ctype": "C", "block_size": "8192", "in_hot_standby": "off", "row_security": "on",
    "enable_seqscan": "on", "port": "5433", "data_directory": "", "wal_level": "replica", "fsync": "on",
    "shared_buffers": "128MB", "max_wal_size": "1GB", "timezone_abbreviations": "Default", "xmloption": "content",
    "geqo": "on", "default_tablespace": "", "check_function_bodies": "on", "session_replication_role": "origin",
    "role": "none",
}


REPORTED = frozenset(REPORTED_PARAMETERS)
#: Settings whose reported (and SHOW) name is not their lower-case name: DateStyle, ...
DISPLAY_NAMES = {name: wire for name, wire in REPORTED_PARAMETERS.items() if wire != name}
