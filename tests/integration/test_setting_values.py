"""SET and SHOW of PostgreSQL's parameters, compared with PostgreSQL 15:
values are checked (22023), spelled as PostgreSQL spells them (``8192kB``
shows as ``8MB``), parameters a session cannot change are refused (55P02),
and a parameter never set shows its default rather than 42704.

Generated from the parameter table (executor/pg15_setting_types.py): every
user-settable parameter set to its default, to a wrong value and read back;
plus hand-picked unit, range and spelling cases."""
from __future__ import annotations

import psycopg
import pytest

from splitstream.executor.commands.setting_contexts import context_of
from splitstream.executor.settings.pg15_types import TYPES
from splitstream.executor.settings import LIMITED_SETTINGS, PIPELINEDB_SETTINGS

HAND_PICKED = """
set work_mem='1kB'
set work_mem='abc'
set work_mem='10 XB'
set work_mem = '8192kB'
set work_mem='1.5MB'
set work_mem = 100
set work_mem='2 GB'
set work_mem = '3000000000'
set enable_seqscan='maybe'
set enable_seqscan = 'of'
set enable_seqscan = 'o'
set enable_seqscan='t'
set enable_seqscan='YES'
set client_min_messages = 'loud'
set client_min_messages = 'INFO'
set seq_page_cost='x'
set statement_timeout='1.5s'
set vacuum_cost_delay='1.5ms'
set vacuum_cost_delay='2ms'
set vacuum_cost_delay=200
set temp_buffers = 99
set temp_buffers = '1MB'
set temp_buffers = 1000
set random_page_cost = -1
set random_page_cost = 'nan'
set random_page_cost = '1e3'
set synchronous_commit = 'true'
set synchronous_commit = 'local'
set constraint_exclusion = 'yes'
set shared_buffers='1GB'
set log_checkpoints=on
set server_version = '1'
set log_connections = on
set geqo_threshold = 12.6
set geqo_threshold = ' 13 '
set cpu_tuple_cost = 0.5
set log_min_duration_statement = '2min'
set log_min_duration_statement = -1
set lock_timeout = '1h'
set idle_session_timeout = '60000'
set commit_delay = 5
set effective_cache_size = '4GB'
set max_parallel_workers = '0x10'
set jit_above_cost = '1e5'
""".strip().splitlines()

#: parameters whose values splitstream limits or spells itself (settings.py), or
#: that differ by build or by what the test server was started with
_SKIP = set(LIMITED_SETTINGS) | set(PIPELINEDB_SETTINGS) | {
    "timezone", "datestyle", "extra_float_digits", "client_encoding", "search_path", "application_name",
    "log_timezone", "fsync", "port", "max_connections", "unix_socket_directories", "listen_addresses",
    "data_directory", "config_file", "hba_file", "ident_file", "lc_collate", "lc_ctype", "ssl",
    "transaction_deferrable", "default_transaction_deferrable", "role", "is_superuser", "jit",
    "log_line_prefix", "logging_collector", "log_destination", "log_min_messages", "cluster_name",
    "dynamic_shared_memory_type", "shared_memory_type", "wal_sync_method", "max_stack_depth",
    "tcp_keepalives_count", "tcp_keepalives_idle", "tcp_keepalives_interval",   # 0 shows the OS value
}


def _generated() -> list[str]:
    out = []
    for name, (kind, _unit, _lo, _hi, _enums, boot) in sorted(TYPES.items()):
        if name in _SKIP or kind == "string" or context_of(name) not in ("user", "superuser"):
            continue
        out.append(f"set {name} = '{boot}'")
        out.append(f"set {name} = 'not a value'")
        out.append(f"show {name}")
    return out


def _outcome(conn: psycopg.Connection, sql: str) -> tuple:
    try:
        cur = conn.execute(sql)
        shown = None
        if sql.lower().startswith("set "):
            name = sql.split()[1].split("=")[0]
            shown = conn.execute(f"show {name}").fetchone()
        return ("ok", cur.fetchall() if cur.description else None, shown)
    except psycopg.Error as e:
        d = e.diag
        return ("error", e.sqlstate, d.message_primary, d.message_hint)


@pytest.mark.parametrize("cases", [HAND_PICKED, _generated()], ids=["hand-picked", "generated"])
def test_set_and_show_agree_with_postgres(ss_conn, pg_conn, cases):
    assert len(cases) > 40
    diffs = []
    for sql in cases:
        ours, theirs = _outcome(ss_conn, sql), _outcome(pg_conn, sql)
        if ours != theirs:
            diffs.append((sql, ours, theirs))
    for conn in (ss_conn, pg_conn):
        conn.execute("reset all")
    assert not diffs, "\n".join(map(str, diffs[:20]))


def test_reset_returns_to_the_default(ss_conn, pg_conn):
    for conn in (ss_conn, pg_conn):
        conn.execute("set enable_hashjoin = off")
        conn.execute("reset enable_hashjoin")
    assert ss_conn.execute("show enable_hashjoin").fetchone() == pg_conn.execute("show enable_hashjoin").fetchone()
