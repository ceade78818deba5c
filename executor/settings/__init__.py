"""Validation and normalisation of SET values."""
from __future__ import annotations

import functools
import re

from splitstream.protocol.messages import REPORTED_PARAMETERS
from splitstream.protocol.types import canonical_zone_name, posix_zone
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, UNDEFINED_OBJECT, PgError

from . import pipelinedb as pipelinedb_gucs
from . import values as setting_values
from .pg15_settings import PARAMETERS

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


#: splitstream's own settings (no dot: they predate the prefix)
OWN_SETTINGS = frozenset({"stream_session_timeout", "executor_backend"})

#: the Spark connector's exactly-once key of the next stream COPY (stream/spark/ledger.py)
SPARK_BATCH_KEY = "splitstream.batch_key"

#: prefixes that are ours: a name under them is known or refused, never a placeholder
OWN_PREFIXES = ("pipelinedb.", "splitstream.")
#: the size of each table's statistics sample (executor/commands/table_stats.py)
SAMPLE_ROWS = "splitstream.sample_rows"
OWN_DOTTED = frozenset({SPARK_BATCH_KEY, SAMPLE_ROWS})

#: PipelineDB's settings (its src/config.c): checked, kept and either honoured
#: or answered with a NOTICE saying why not (settings/pipelinedb.py)
PIPELINEDB_SETTINGS = pipelinedb_gucs.DEFAULTS


_READ_COMMITTED = frozenset({"read committed", "read uncommitted"})
_OFF = frozenset({"off", "false", "0", "no"})
_C_LOCALE = frozenset({"c", "posix", ""})

#: PostgreSQL settings that change results, with the values splitstream
#: honours; any other value is refused rather than accepted and ignored
LIMITED_SETTINGS: dict[str, tuple[frozenset[str], str]] = {
    "intervalstyle": (frozenset({"postgres"}), "Intervals are written in the postgres style only."),
    "bytea_output": (frozenset({"hex"}), "bytea values are written in hex only."),
    "standard_conforming_strings": (frozenset({"on", "true", "1", "yes"}), "Backslashes in '...' literals are "
                                    "always literal (standard_conforming_strings = on); use E'...' for escapes."),
    "session_replication_role": (frozenset({"origin"}), "Constraints are always enforced."),
    "lc_messages": (_C_LOCALE, "splitstream runs in the C locale."),
    "lc_monetary": (_C_LOCALE, "splitstream runs in the C locale."),
    "lc_numeric": (_C_LOCALE, "splitstream runs in the C locale."),
    "lc_time": (_C_LOCALE, "splitstream runs in the C locale."),
}

#: settings whose value is kept as given: read by splitstream itself in its
#: own spelling (the role machinery), or PostgreSQL internals it reports as is
_OWN_SPELLING = frozenset({"is_superuser", "role", "session_authorization", "server_version",
                           "server_version_num", "server_encoding"})

_DATESTYLE_OK = frozenset({"iso", "mdy", "us", "noneuro", "noneuropean", "default"})


def check_setting(name: str, value: str | None) -> None:
    """Refuse a setting splitstream would otherwise accept and ignore: an
    unknown name (42704, as PostgreSQL, except a placeholder such as
    ``myapp.x`` under a prefix that is not ours), a value PipelineDB would
    refuse for its setting (22023; settings/pipelinedb.py) or a value of a
    PostgreSQL setting that is not honoured (0A000 with a hint).
    ``value`` None is RESET: back to what splitstream does, always fine."""
    if pipelinedb_gucs.known(name):
        if value is not None:
            pipelinedb_gucs.normalize(name, value)
        return
    if "." in name:
        if name.startswith(OWN_PREFIXES) and name not in OWN_DOTTED:
            raise PgError(UNDEFINED_OBJECT, f'unrecognized configuration parameter "{name}"')
        return                                   # a placeholder (myapp.x): inert, as in PostgreSQL
    if name not in PG15_SETTINGS and name not in OWN_SETTINGS and name not in DEFAULT_SETTINGS:
        raise PgError(UNDEFINED_OBJECT, f'unrecognized configuration parameter "{name}"')
    if value is None:
        return
    v = value.strip().lower()
    if name in LIMITED_SETTINGS and v not in LIMITED_SETTINGS[name][0]:
        raise PgError(FEATURE_NOT_SUPPORTED, f'setting "{name}" to "{value}" is not supported',
                      hint=LIMITED_SETTINGS[name][1])
    if name == "datestyle" and not {p.strip() for p in v.split(",")} <= _DATESTYLE_OK:
        raise PgError(FEATURE_NOT_SUPPORTED, f'setting "DateStyle" to "{value}" is not supported',
                      hint="Dates are written in ISO style and read month first (ISO, MDY).")


def normalize_setting(name: str, value: str) -> str:
    if name in ("statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout"):
        ms = _duration_ms(name, value)
        if ms == 0:
            return "0"
        for unit, f in (("d", 86400000), ("h", 3600000), ("min", 60000), ("s", 1000)):
            if ms % f == 0:
                return f"{ms // f}{unit}"
        return f"{ms}ms"
    if pipelinedb_gucs.known(name):
        return pipelinedb_gucs.normalize(name, value)
    if name == "stream_session_timeout":
        ms = _duration_ms(name, value)
        return f"{ms}ms"
    if name == "timezone":
        v = value.strip("'")
        if v.upper() in ("UTC", "GMT", "Z"):
            return "UTC" if v.upper() != "GMT" else "GMT"
        canonical = canonical_zone_name(v)     # zone names match without regard to case
        if canonical is not None:
            return canonical
        if posix_zone(v) is None:              # else a POSIX specification: UTC+3, <+05:30>-05:30
            raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "TimeZone": "{value}"')
        return v
    if name == "executor_backend":
        v = value.lower()
        if v not in ("auto", "vector", "llvm"):
            raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "executor_backend": "{value}"',
                          hint='Available values: auto, vector, llvm.')
        return v
    if name == "datestyle":
        return "ISO, MDY"
    if name == SAMPLE_ROWS:          # '' (RESET): 300 x default_statistics_target, as PostgreSQL samples
        return str(_int_in_range(name, value, 100, 10_000_000)) if str(value).strip() else ""
    if name == "extra_float_digits":
        return str(_int_in_range(name, value, -15, 3))
    if name in _OWN_SPELLING:
        return value
    shown = setting_values.checked(name, value)
    return value if shown is None else shown


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
    "role": "none", **pipelinedb_gucs.DEFAULTS,
}


REPORTED = frozenset(REPORTED_PARAMETERS)
#: Settings whose reported (and SHOW) name is not their lower-case name: DateStyle, ...
DISPLAY_NAMES = {name: wire for name, wire in REPORTED_PARAMETERS.items() if wire != name}


#: The names of PostgreSQL 15's configuration parameters (pg_settings, plus
#: the ones it hides from SHOW ALL: role, seed, session_authorization,
#: is_superuser), taken from a PostgreSQL 15 (pg15_settings.py).  SET of a
#: name outside this list, without a dot, is PostgreSQL's 42704; most of
#: these only tune PostgreSQL's own machinery (planner costs, vacuum,
#: logging) and are inert here, and the ones that change results are in
#: LIMITED_SETTINGS.
PG15_SETTINGS = frozenset(PARAMETERS) | {"role", "seed", "session_authorization", "is_superuser"}
