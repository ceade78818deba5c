"""Validation and normalisation of SET values."""
from __future__ import annotations

import functools
import re

from splitstream.protocol.messages import REPORTED_PARAMETERS
from splitstream.protocol.types import canonical_zone_name, posix_zone
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, UNDEFINED_OBJECT, PgError

from . import pipelinedb as pipelinedb_gucs
from . import values as setting_values

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
#: is_superuser), taken from a PostgreSQL 15.  SET of a name outside this
#: list, without a dot, is PostgreSQL's 42704; most of these only tune
#: PostgreSQL's own machinery (planner costs, vacuum, logging) and are inert
#: here, and the ones that change results are in LIMITED_SETTINGS.
PG15_SETTINGS = frozenset({
    "allow_in_place_tablespaces", "allow_system_table_mods", "application_name", "archive_cleanup_command",
    "archive_command", "archive_library", "archive_mode", "archive_timeout", "array_nulls", "authentication_timeout",
    "autovacuum", "autovacuum_analyze_scale_factor", "autovacuum_analyze_threshold", "autovacuum_freeze_max_age",
    "autovacuum_max_workers", "autovacuum_multixact_freeze_max_age", "autovacuum_naptime",
    "autovacuum_vacuum_cost_delay", "autovacuum_vacuum_cost_limit", "autovacuum_vacuum_insert_scale_factor",
    "autovacuum_vacuum_insert_threshold", "autovacuum_vacuum_scale_factor", "autovacuum_vacuum_threshold",
    "autovacuum_work_mem", "backend_flush_after", "backslash_quote", "backtrace_functions", "bgwriter_delay",
    "bgwriter_flush_after", "bgwriter_lru_maxpages", "bgwriter_lru_multiplier", "block_size", "bonjour",
    "bonjour_name", "bytea_output", "check_function_bodies", "checkpoint_completion_target",
    "checkpoint_flush_after", "checkpoint_timeout", "checkpoint_warning", "client_connection_check_interval",
    "client_encoding", "client_min_messages", "cluster_name", "commit_delay", "commit_siblings", "compute_query_id",
    "config_file", "constraint_exclusion", "cpu_index_tuple_cost", "cpu_operator_cost", "cpu_tuple_cost",
    "cursor_tuple_fraction", "data_checksums", "data_directory", "data_directory_mode", "data_sync_retry",
    "datestyle", "db_user_namespace", "deadlock_timeout", "debug_assertions", "debug_discard_caches",
    "debug_pretty_print", "debug_print_parse", "debug_print_plan", "debug_print_rewritten",
    "default_statistics_target", "default_table_access_method", "default_tablespace", "default_text_search_config",
    "default_toast_compression", "default_transaction_deferrable", "default_transaction_isolation",
    "default_transaction_read_only", "dynamic_library_path", "dynamic_shared_memory_type", "effective_cache_size",
    "effective_io_concurrency", "enable_async_append", "enable_bitmapscan", "enable_gathermerge", "enable_hashagg",
    "enable_hashjoin", "enable_incremental_sort", "enable_indexonlyscan", "enable_indexscan", "enable_material",
    "enable_memoize", "enable_mergejoin", "enable_nestloop", "enable_parallel_append", "enable_parallel_hash",
    "enable_partition_pruning", "enable_partitionwise_aggregate", "enable_partitionwise_join", "enable_seqscan",
    "enable_sort", "enable_tidscan", "escape_string_warning", "event_source", "exit_on_error", "extension_destdir",
    "external_pid_file", "extra_float_digits", "force_parallel_mode", "from_collapse_limit", "fsync",
    "full_page_writes", "geqo", "geqo_effort", "geqo_generations", "geqo_pool_size", "geqo_seed",
    "geqo_selection_bias", "geqo_threshold", "gin_fuzzy_search_limit", "gin_pending_list_limit",
    "hash_mem_multiplier", "hba_file", "hot_standby", "hot_standby_feedback", "huge_page_size", "huge_pages",
    "ident_file", "idle_in_transaction_session_timeout", "idle_session_timeout", "ignore_checksum_failure",
    "ignore_invalid_pages", "ignore_system_indexes", "in_hot_standby", "integer_datetimes", "intervalstyle",
    "is_superuser", "jit", "jit_above_cost", "jit_debugging_support", "jit_dump_bitcode", "jit_expressions",
    "jit_inline_above_cost", "jit_optimize_above_cost", "jit_profiling_support", "jit_provider",
    "jit_tuple_deforming", "join_collapse_limit", "krb_caseins_users", "krb_server_keyfile", "lc_collate",
    "lc_ctype", "lc_messages", "lc_monetary", "lc_numeric", "lc_time", "listen_addresses", "lo_compat_privileges",
    "local_preload_libraries", "lock_timeout", "log_autovacuum_min_duration", "log_checkpoints", "log_connections",
    "log_destination", "log_directory", "log_disconnections", "log_duration", "log_error_verbosity",
    "log_executor_stats", "log_file_mode", "log_filename", "log_hostname", "log_line_prefix", "log_lock_waits",
    "log_min_duration_sample", "log_min_duration_statement", "log_min_error_statement", "log_min_messages",
    "log_parameter_max_length", "log_parameter_max_length_on_error", "log_parser_stats", "log_planner_stats",
    "log_recovery_conflict_waits", "log_replication_commands", "log_rotation_age", "log_rotation_size",
    "log_startup_progress_interval", "log_statement", "log_statement_sample_rate", "log_statement_stats",
    "log_temp_files", "log_timezone", "log_transaction_sample_rate", "log_truncate_on_rotation", "logging_collector",
    "logical_decoding_work_mem", "maintenance_io_concurrency", "maintenance_work_mem", "max_connections",
    "max_files_per_process", "max_function_args", "max_identifier_length", "max_index_keys",
    "max_locks_per_transaction", "max_logical_replication_workers", "max_parallel_maintenance_workers",
    "max_parallel_workers", "max_parallel_workers_per_gather", "max_pred_locks_per_page",
    "max_pred_locks_per_relation", "max_pred_locks_per_transaction", "max_prepared_transactions",
    "max_replication_slots", "max_slot_wal_keep_size", "max_stack_depth", "max_standby_archive_delay",
    "max_standby_streaming_delay", "max_sync_workers_per_subscription", "max_wal_senders", "max_wal_size",
    "max_worker_processes", "min_dynamic_shared_memory", "min_parallel_index_scan_size",
    "min_parallel_table_scan_size", "min_wal_size", "old_snapshot_threshold", "parallel_leader_participation",
    "parallel_setup_cost", "parallel_tuple_cost", "password_encryption", "plan_cache_mode", "port",
    "post_auth_delay", "pre_auth_delay", "primary_conninfo", "primary_slot_name", "promote_trigger_file",
    "quote_all_identifiers", "random_page_cost", "recovery_end_command", "recovery_init_sync_method",
    "recovery_min_apply_delay", "recovery_prefetch", "recovery_target", "recovery_target_action",
    "recovery_target_inclusive", "recovery_target_lsn", "recovery_target_name", "recovery_target_time",
    "recovery_target_timeline", "recovery_target_xid", "recursive_worktable_factor", "remove_temp_files_after_crash",
    "restart_after_crash", "restore_command", "restrict_nonsystem_relation_kind", "role", "row_security",
    "search_path", "seed", "segment_size", "seq_page_cost", "server_encoding", "server_version",
    "server_version_num", "session_authorization", "session_preload_libraries", "session_replication_role",
    "shared_buffers", "shared_memory_size", "shared_memory_size_in_huge_pages", "shared_memory_type",
    "shared_preload_libraries", "ssl", "ssl_ca_file", "ssl_cert_file", "ssl_ciphers", "ssl_crl_dir", "ssl_crl_file",
    "ssl_dh_params_file", "ssl_ecdh_curve", "ssl_key_file", "ssl_library", "ssl_max_protocol_version",
    "ssl_min_protocol_version", "ssl_passphrase_command", "ssl_passphrase_command_supports_reload",
    "ssl_prefer_server_ciphers", "standard_conforming_strings", "statement_timeout", "stats_fetch_consistency",
    "superuser_reserved_connections", "synchronize_seqscans", "synchronous_commit", "synchronous_standby_names",
    "syslog_facility", "syslog_ident", "syslog_sequence_numbers", "syslog_split_messages", "tcp_keepalives_count",
    "tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_user_timeout", "temp_buffers", "temp_file_limit",
    "temp_tablespaces", "timezone", "timezone_abbreviations", "trace_notify", "trace_recovery_messages",
    "trace_sort", "track_activities", "track_activity_query_size", "track_commit_timestamp", "track_counts",
    "track_functions", "track_io_timing", "track_wal_io_timing", "transaction_deferrable", "transaction_isolation",
    "transaction_read_only", "transform_null_equals", "unix_socket_directories", "unix_socket_group",
    "unix_socket_permissions", "update_process_title", "vacuum_cost_delay", "vacuum_cost_limit",
    "vacuum_cost_page_dirty", "vacuum_cost_page_hit", "vacuum_cost_page_miss", "vacuum_defer_cleanup_age",
    "vacuum_failsafe_age", "vacuum_freeze_min_age", "vacuum_freeze_table_age", "vacuum_multixact_failsafe_age",
    "vacuum_multixact_freeze_min_age", "vacuum_multixact_freeze_table_age", "wal_block_size", "wal_buffers",
    "wal_compression", "wal_consistency_checking", "wal_decode_buffer_size", "wal_init_zero", "wal_keep_size",
    "wal_level", "wal_log_hints", "wal_receiver_create_temp_slot", "wal_receiver_status_interval",
    "wal_receiver_timeout", "wal_recycle", "wal_retrieve_retry_interval", "wal_segment_size", "wal_sender_timeout",
    "wal_skip_threshold", "wal_sync_method", "wal_writer_delay", "wal_writer_flush_after", "work_mem", "xmlbinary",
    "xmloption", "zero_damaged_pages",
})
