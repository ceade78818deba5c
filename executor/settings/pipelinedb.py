"""PipelineDB's settings (its ``src/config.c``): names, types, ranges and
defaults as PipelineDB declares them, and what splitstream does with each.

A PipelineDB user's ``SET pipelinedb.x = ...`` (or ``-c pipelinedb.x=...``,
``ALTER ROLE ... SET``) is checked as PipelineDB checks it (22023 for a value
outside its type or range) and kept, so SHOW and RESET work.  Then either
splitstream honours it (:data:`HONOURED`, read where it acts), or SET answers
with a NOTICE saying why it does not apply (:func:`why_not_applied`): never
accepted silently.  ``stream_targets`` changes which views an INSERT feeds
(``executor/stream/targets.py``); SET checks its list syntax, the names are
looked up when a statement uses them.
"""
from __future__ import annotations

from dataclasses import dataclass

from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError

from . import values as setting_values

_INT_MAX = 2**31 - 1
_MAX_KB = _INT_MAX // 1024

_NO_WORKERS = ("splitstream updates continuous views inside the inserting statement: there are no worker, "
               "combiner, queue or reaper processes to size or tune")
_NO_BATCHING = ("each INSERT or COPY is applied to every continuous view as one batch before it returns; "
                "there is no worker batch to size or wait for")
_NO_MATRELS = "continuous views keep their state in memory and checkpoints, not in materialization tables"
_REAPER = "expired panes and TTL groups are dropped by a background reaper in whole rounds"


@dataclass(frozen=True)
class Guc:
    """One PipelineDB setting: ``kind`` int|real|bool|enum|string, its
    default, range or choices, and why it does not apply ('' if honoured)."""

    kind: str
    default: str
    lo: float = 0
    hi: float = 0
    choices: tuple[str, ...] = ()
    unit: str = ""
    why_not: str = ""


GUCS: dict[str, Guc] = {
    "num_workers": Guc("int", "1", 1, 1024, why_not=_NO_WORKERS),
    "num_combiners": Guc("int", "1", 1, 1024, why_not=_NO_WORKERS),
    "num_queues": Guc("int", "1", 1, 1024, why_not=_NO_WORKERS),
    "num_reapers": Guc("int", "1", 1, 1024, why_not=_NO_WORKERS),
    "stream_insert_level": Guc("enum", "sync_receive", choices=("async", "sync_receive", "sync_commit")),
    "sliding_window_step_factor": Guc("real", "5", 0, 50),
    "continuous_queries_enabled": Guc("bool", "on"),
    "stream_targets": Guc("string", ""),
    "batch_mem": Guc("int", "262144", 8192, _MAX_KB, unit="kB", why_not=_NO_BATCHING),
    "batch_size": Guc("int", "10000", 10, _INT_MAX, why_not=_NO_BATCHING),
    "commit_interval": Guc("int", "50", 0, 60000, unit="ms", why_not=_NO_BATCHING),
    "ipc_hwm": Guc("int", "10", 1, _INT_MAX, why_not=_NO_WORKERS),
    "max_wait": Guc("int", "50", 1, 60000, unit="ms", why_not=_NO_BATCHING),
    "ttl_expiration_batch_size": Guc("int", "10000", 0, _INT_MAX,
                                     why_not=_REAPER + "; pipelinedb.ttl_expire(view) drops all expired groups at once"),
    "ttl_expiration_threshold": Guc("int", "5", 0, 100, why_not=_REAPER + ", at every read and in the background"),
    "queue_mem": Guc("int", "262144", 8192, _MAX_KB, unit="kB", why_not=_NO_WORKERS),
    "fillfactor": Guc("int", "50", 1, 100, why_not=_NO_MATRELS),
    "combiner_work_mem": Guc("int", "262144", 16384, _MAX_KB, unit="kB", why_not=_NO_WORKERS),
    "anonymous_update_checks": Guc("bool", "on", why_not="splitstream never checks for updates"),
    "matrels_writable": Guc("bool", "off", why_not=_NO_MATRELS + ", which only its stream writes"),
}

PREFIX = "pipelinedb."
#: the session defaults (SHOW before any SET; RESET returns to them)

STREAM_INSERT_LEVEL = PREFIX + "stream_insert_level"
STEP_FACTOR = PREFIX + "sliding_window_step_factor"
QUERIES_ENABLED = PREFIX + "continuous_queries_enabled"
STREAM_TARGETS = PREFIX + "stream_targets"

_TRUE = ("on", "true", "yes", "1", "t", "y")
_FALSE = ("off", "false", "no", "0", "f", "n")


def known(name: str) -> bool:
    return name.startswith(PREFIX) and name[len(PREFIX):] in GUCS


def normalize(name: str, value: str) -> str:
    """The value as SHOW prints it; 22023 for one PipelineDB would refuse."""
    g = GUCS[name[len(PREFIX):]]
    v = str(value).strip().strip("'")
    bad = PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "{name}": "{value}"')
    if g.kind == "bool":
        if v.lower() in _TRUE:
            return "on"
        if v.lower() in _FALSE:
            return "off"
        raise PgError(INVALID_PARAMETER_VALUE, f'parameter "{name}" requires a Boolean value')
    if g.kind == "enum":
        if v.lower() not in g.choices:
            raise PgError(INVALID_PARAMETER_VALUE, bad.message, hint="Available values: " + ", ".join(g.choices) + ".")
        return v.lower()
    if g.kind == "string":
        if name == STREAM_TARGETS and v.strip():
            split_targets(v)
        return v
    return _number(name, g, v, bad)


def split_targets(value: str) -> list[str]:
    """The items of stream_targets' comma-separated identifier list, as
    PostgreSQL's SplitIdentifierString splits search_path (double quotes
    keep commas and dots); 22023 for an empty item or an open quote."""
    items, cur, quoted = [], "", False
    for ch in value:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    items.append(cur.strip())
    if quoted or any(not i or i == '""' for i in items):
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "{STREAM_TARGETS}": "{value}"',
                      detail="List syntax is invalid.")
    return items


def _number(name: str, g: Guc, v: str, bad: PgError) -> str:
    if g.unit and g.kind == "int":
        # a PostgreSQL GUC with a unit (PipelineDB's are GUC_UNIT_KB): any memory unit is read,
        # and SHOW prints the largest unit that divides it ('256MB', as guc.c's _ShowOption)
        return setting_values.integer_text(name, v, g.unit, int(g.lo), int(g.hi))
    text = v.lower()
    if g.unit and text.endswith(g.unit.lower()):
        text = text[:-len(g.unit)].strip()
    try:
        num = float(text) if g.kind == "real" else int(text)
    except ValueError:
        raise bad from None
    if not g.lo <= num <= g.hi:
        lo, hi = (g.lo, g.hi) if g.kind == "real" else (int(g.lo), int(g.hi))
        raise PgError(INVALID_PARAMETER_VALUE,
                      f'{v} is outside the valid range for parameter "{name}" ({lo:g} .. {hi:g})')
    return f"{num:g}" if g.kind == "real" else f"{num}{g.unit}"


def why_not_applied(name: str, value: str) -> str:
    """The NOTICE a SET of ``name`` to ``value`` (normalised) answers with,
    '' when splitstream honours it."""
    g = GUCS[name[len(PREFIX):]]
    if g.why_not:
        return f'"{name}" does not apply to splitstream: {g.why_not}.'
    if name == STREAM_INSERT_LEVEL and value == "async":
        return (f'"{name}" = async does not apply to splitstream: an INSERT into a stream returns once every '
                "continuous view has consumed it (as sync_commit); there is no asynchronous level.")
    return ""


def step_factor(settings: dict) -> int | None:
    """The session's default step_factor for a new sliding-window view
    (None: splitstream's default), whole percent as views keep it."""
    v = settings.get(STEP_FACTOR)
    return None if v is None or v == DEFAULTS[STEP_FACTOR] else max(1, round(float(v)))


def queries_enabled(settings: dict) -> bool:
    """Whether a new continuous view starts active (PipelineDB's continuous_queries_enabled)."""
    return settings.get(QUERIES_ENABLED, "on") == "on"


#: every PipelineDB parameter's default as SHOW prints it ('256MB' for batch_mem's 262144 kB)
DEFAULTS = {PREFIX + n: normalize(PREFIX + n, g.default) for n, g in GUCS.items()}
