"""Session settings as the protocol carries them: the startup packet's
settings (validated, with defaults), the ParameterStatus set reported to the
client, and the statement_timeout the server arms around engine calls.
(Not Bind parameters: those are ``portal.decode_params``.)

Clients parse several of these (psycopg reads server_version and
client_encoding, JDBC checks DateStyle/integer_datetimes), so the values
mirror what PostgreSQL 15 reports by default.
"""
from __future__ import annotations

import functools
import re
from zoneinfo import ZoneInfo

from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError
from splitstream.protocol.messages import REPORTED_PARAMETERS

SERVER_VERSION = "15.0"


DEFAULTS = {
    "application_name": "",
    "client_encoding": "UTF8",
    "datestyle": "ISO, MDY",
    "default_transaction_read_only": "off",
    "in_hot_standby": "off",
    "integer_datetimes": "on",
    "intervalstyle": "postgres",
    "is_superuser": "on",
    "server_encoding": "UTF8",
    "server_version": SERVER_VERSION,
    "standard_conforming_strings": "on",
    "timezone": "UTC",
    "statement_timeout": "0",
    "search_path": '"$user", public',
    "extra_float_digits": "1",
    # read by clients (SQLAlchemy reflection, pgjdbc) through current_setting/SHOW
    "default_table_access_method": "heap",
    "password_encryption": "scram-sha-256",
    "max_index_keys": "32",
    "transaction_deferrable": "off",
}

#: Startup keys that are connection attributes, not settings.
_NOT_SETTINGS = {"user", "database", "options", "replication"}


def _invalid(name: str, value: str) -> PgError:
    return PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "{name}": "{value}"', severity="FATAL")


def parse_options(options: str) -> dict[str, str]:
    """Parse the startup ``options`` string: ``-c a=b --c=d`` (backslash escapes spaces)."""
    tokens: list[str] = []
    cur: list[str] = []
    it = iter(options)
    for ch in it:
        if ch == "\\":
            cur.append(next(it, ""))
        elif ch.isspace():
            if cur:
                tokens.append("".join(cur))
                cur = []
        else:
            cur.append(ch)
    if cur:
        tokens.append("".join(cur))
    out: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "-c" and i + 1 < len(tokens):
            tok = tokens[i + 1]
            i += 1
        elif tok.startswith("-c"):
            tok = tok[2:]
        elif tok.startswith("--"):
            tok = tok[2:]
        else:
            raise PgError("42601", f"invalid command-line argument for server process: {tok}",
                          hint='Try "postgres --help" for more information.', severity="FATAL")
        if "=" not in tok:
            raise PgError("42601", f"--{tok} requires a value", severity="FATAL")
        k, v = tok.split("=", 1)
        out[k.replace("-", "_").lower()] = v
        i += 1
    return out


def normalize(name: str, value: str) -> str:
    """Validate and canonicalise one client-supplied setting (FATAL on bad values)."""
    if name == "client_encoding":
        # PostgreSQL compares encoding names ignoring case and non-alphanumerics
        # (asyncpg sends "'utf-8'", quotes included).
        clean = re.sub(r"[^a-z0-9]", "", value.lower())
        if clean in ("utf8", "unicode"):
            return "UTF8"
        if clean == "sqlascii":
            return "SQL_ASCII"
        raise _invalid("client_encoding", value)
    if name == "datestyle":
        parts = [p.strip().upper() for p in value.split(",") if p.strip()]
        order = "MDY"
        for p in parts:
            if p in ("DMY", "EURO", "EUROPEAN"):
                order = "DMY"
            elif p in ("YMD",):
                order = "YMD"
            elif p not in ("ISO", "MDY", "US", "NONEURO", "NONEUROPEAN", "POSTGRES", "SQL", "GERMAN"):
                raise _invalid("DateStyle", value)
        return f"ISO, {order}"
    if name == "timezone":
        if not _valid_timezone(value):
            raise _invalid("TimeZone", value)
        return value
    return value


def _valid_timezone(tz: str) -> bool:
    if tz.upper() in ("UTC", "GMT", "Z", "ZULU") or re.fullmatch(r"[+-]?\d{1,2}(:?\d{2})?", tz.strip()):
        return True
    try:
        ZoneInfo(tz)
        return True
    except Exception:
        return False


def client_given(params: dict[str, str]) -> dict[str, str]:
    """The settings the client gave in its StartupMessage (``options`` included):
    they win over the role's and database's settings (ALTER ROLE ... SET)."""
    given: dict[str, str] = {}
    if params.get("options"):
        given.update(parse_options(params["options"]))
    for k, v in params.items():
        if k not in _NOT_SETTINGS and not k.startswith("_pq_."):
            given[k.lower()] = v
    return given


def startup_settings(params: dict[str, str], user: str, superuser: bool = True) -> dict[str, str]:
    """Settings dict for SessionInfo from the StartupMessage parameters."""
    settings = dict(DEFAULTS)
    for k, v in client_given(params).items():
        if k in ("server_version", "server_encoding", "integer_datetimes", "is_superuser",
                 "session_authorization", "in_hot_standby"):
            continue  # read-only / internal: PostgreSQL ignores or refuses these
        settings[k] = normalize(k, v)   # the engine session validates the rest
    settings["session_authorization"] = user
    settings["is_superuser"] = "on" if superuser else "off"
    return settings


def reported(settings: dict[str, str]) -> list[tuple[str, str]]:
    """(wire name, value) pairs sent as ParameterStatus after authentication."""
    return [(wire, settings.get(name, DEFAULTS.get(name, ""))) for name, wire in REPORTED_PARAMETERS.items()]


def wire_name(name: str) -> str:
    """Canonical ParameterStatus name for a setting (TimeZone, DateStyle, ...)."""
    return REPORTED_PARAMETERS.get(name.lower(), name)


_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "min": 60000.0, "h": 3600000.0, "d": 86400000.0}


@functools.lru_cache(maxsize=64)
def timeout_seconds(value: str | None) -> float:
    """Parse a statement_timeout setting (ms by default, or with units) into seconds; 0 = none."""
    if not value:
        return 0.0
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*", str(value).lower())
    if not m:
        return 0.0
    unit = m.group(2) or "ms"
    mult = _UNITS_MS.get(unit)
    if mult is None:
        return 0.0
    return float(m.group(1)) * mult / 1000.0
