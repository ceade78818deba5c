"""splitstream's own configuration parameters and PipelineDB's, described as
pg_settings describes PostgreSQL's (settings/pg15_settings.py has the same
shape): name -> (name, vartype, unit, category, short_desc, extra_desc,
context, min_val, max_val, enumvals, boot_val).

They are listed under their own categories ('splitstream ...', 'PipelineDB')
so a reader of pg_settings or SHOW ALL tells them apart from PostgreSQL's.
PipelineDB's descriptions are its own (its src/config.c); a setting
splitstream keeps but does not apply says so in extra_desc.  Every one may
be SET by any session here (context 'user'), where PipelineDB fixed most at
server start.
"""
from __future__ import annotations

from . import pipelinedb
from .pg15_settings import Param

_INT_MAX = str(2**31 - 1)

_SPLITSTREAM: dict[str, Param] = {
    "executor_backend": (
        "executor_backend", "enum", None, "splitstream / Executor",
        "Chooses how statements run: vector (numpy batches), llvm (compiled), or auto (per plan).",
        None, "user", None, None, ("auto", "vector", "llvm"), "auto"),
    "stream_session_timeout": (
        "stream_session_timeout", "integer", "ms", "splitstream / Streams",
        "Sets how long a SELECT reading a stream waits for further events before it ends.",
        None, "user", "0", _INT_MAX, None, "100"),
    "splitstream.sample_rows": (
        "splitstream.sample_rows", "string", None, "splitstream / Statistics",
        "Sets the number of rows ANALYZE samples per table (100 .. 10000000).",
        "Empty: 300 times default_statistics_target, as PostgreSQL samples.", "user", None, None, None, ""),
    "splitstream.batch_key": (
        "splitstream.batch_key", "string", None, "splitstream / Spark connector",
        "Names the next stream COPY of the Spark connector, so a retried batch is applied once.",
        "Set by the connector, not by hand.", "user", None, None, None, ""),
}

#: PipelineDB's short and extra descriptions (its src/config.c)
_PIPELINEDB_TEXT: dict[str, tuple[str, str]] = {
    "num_workers": ("Sets the number of parallel continuous query worker processes to use for each database.", ""),
    "num_combiners": ("Sets the number of parallel continuous query combiner processes to use for each database.", ""),
    "num_queues": ("Sets the number of parallel continuous query IPC queues.", ""),
    "num_reapers": ("Sets the number of parallel continuous query reaper processes.", ""),
    "stream_insert_level": ("Sets the current transaction's stream write synchronization level.", ""),
    "sliding_window_step_factor": (
        "Sets the default step size for a sliding window query as a percentage of the window size.",
        "A higher number will improve performance but tradeoff refresh interval."),
    "continuous_queries_enabled": ("If true, continuous queries should be be enabled upon creation.", ""),
    "stream_targets": ("List of continuous views that will be affected when inserting into an stream.", ""),
    "batch_mem": (
        "Sets the maximum size of the batch of events to accumulate before executing a continuous query plan on them.",
        "A higher value usually yields less frequent continuous view updates."),
    "batch_size": (
        "Sets the maximum size of the batch of events to accumulate before executing a continuous query plan on them.",
        "A higher value usually yields less frequent continuous view updates."),
    "commit_interval": (
        "Sets the number of milliseconds that combiners will keep combining in memory before committing the result.",
        "A longer commit interval will increase performance at the expense of less frequent continuous view updates "
        "and more potential data loss."),
    "ipc_hwm": ("Sets the high watermark for IPC between worker and combiner processes.",
                "A value will queue more IPC messages in memory."),
    "max_wait": ("Sets the time a continuous query process will wait for a batch to accumulate.",
                 "A higher value usually yields less frequent continuous view updates, but adversely affects latency."),
    "ttl_expiration_batch_size": ("Sets the maximum number of TTL-expired rows to delete at a time.", ""),
    "ttl_expiration_threshold": (
        "Sets the percentage of a relation's TTL that must have elapsed before attempting to expire rows again.", ""),
    "queue_mem": ("Sets the maximum amount of memory each queue process will use.", ""),
    "fillfactor": ("Sets the default fillfactor to use for continuous views.", ""),
    "combiner_work_mem": ("Sets the maximum memory to be used for combining partial results for continuous queries.", ""),
    "anonymous_update_checks": ("Anonymously check for available updates.", ""),
    "matrels_writable": ("If true, allow changes to be made directly to materialization tables.", ""),
}

_VARTYPES = {"int": "integer", "real": "real", "bool": "bool", "enum": "enum", "string": "string"}


def _limit(g: pipelinedb.Guc, x: float) -> str | None:
    if g.kind not in ("int", "real"):
        return None
    return "%g" % x if g.kind == "real" else str(int(x))


def _pipelinedb(short: str, g: pipelinedb.Guc) -> Param:
    text, extra = _PIPELINEDB_TEXT[short]
    if g.why_not:
        extra = (extra + " " if extra else "") + f"Does not apply to splitstream: {g.why_not}."
    name = pipelinedb.PREFIX + short
    return (name, _VARTYPES[g.kind], g.unit or None, "PipelineDB", text, extra or None, "user", _limit(g, g.lo),
            _limit(g, g.hi), g.choices or None, g.default)


OWN_PARAMETERS: dict[str, Param] = {
    **_SPLITSTREAM,
    **{pipelinedb.PREFIX + short: _pipelinedb(short, g) for short, g in pipelinedb.GUCS.items()},
}
