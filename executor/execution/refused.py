"""PostgreSQL 15 functions of the documented chapters (issue 15 scope 3)
that splitstream does not implement: a call fails with 0A000 naming the
function and one of these hints, never with 42883 as if PostgreSQL had no
such function.  ``tests/sql/test_chapter_coverage.py`` keeps the chapters
and this list in step.

Why grouped by reason: the hint tells the user what to do instead, and one
reason covers a family (the SQL/JSON path language, snapshots, ...).
"""
from __future__ import annotations

_JSONPATH = ("splitstream does not implement the SQL/JSON path language (jsonpath) yet; "
             "use the -> ->> #> #>> operators or jsonb_extract_path.")
_RECORD = ("splitstream has no composite (row) types to populate; extract the fields with ->> and cast them, "
           "or use jsonb_each / jsonb_array_elements in FROM.")
_STATS = "splitstream does not implement the statistical aggregates yet; compute them from sum(), count() and avg()."
_SNAPSHOT = "splitstream has no MVCC snapshots or transaction ids to inspect."
_ACL = "splitstream does not expose aclitem values; read the privileges with has_table_privilege and friends."
_NO_OBJECT = "splitstream has no such objects (text search, operator families, collations, extended statistics)."
_SERVER = "splitstream does not track this server state."

REFUSED: dict[str, str] = {
    **{f: _JSONPATH for f in (
        "jsonb_path_exists", "jsonb_path_match", "jsonb_path_query", "jsonb_path_query_array",
        "jsonb_path_query_first", "jsonb_path_exists_tz", "jsonb_path_match_tz", "jsonb_path_query_tz",
        "jsonb_path_query_array_tz", "jsonb_path_query_first_tz")},
    **{f: _RECORD for f in (
        "json_populate_record", "jsonb_populate_record", "json_populate_recordset", "jsonb_populate_recordset",
        "json_to_record", "jsonb_to_record", "json_to_recordset", "jsonb_to_recordset")},
    **{f: _STATS for f in ("corr", "covar_pop", "covar_samp", "regr_avgx", "regr_avgy", "regr_count",
                           "regr_intercept", "regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy")},
    **{f: _SNAPSHOT for f in (
        "pg_current_snapshot", "pg_current_xact_id_if_assigned", "pg_snapshot_xip", "pg_snapshot_xmax",
        "pg_snapshot_xmin", "pg_visible_in_snapshot", "pg_xact_status", "pg_xact_commit_timestamp",
        "pg_xact_commit_timestamp_origin", "pg_last_committed_xact", "txid_current_if_assigned",
        "txid_current_snapshot", "txid_snapshot_xip", "txid_snapshot_xmax", "txid_snapshot_xmin",
        "txid_visible_in_snapshot", "txid_status", "pg_blocking_pids", "pg_safe_snapshot_blocking_pids")},
    **{f: _ACL for f in ("aclexplode", "makeaclitem")},
    **{f: "splitstream does not implement this privilege check; has_table_privilege, has_column_privilege, "
          "has_schema_privilege, has_database_privilege, has_function_privilege and has_sequence_privilege work."
       for f in ("has_any_column_privilege", "has_foreign_data_wrapper_privilege", "has_language_privilege",
                 "has_parameter_privilege", "has_server_privilege", "has_tablespace_privilege",
                 "has_type_privilege", "row_security_active")},
    **{f: _NO_OBJECT for f in (
        "pg_operator_is_visible", "pg_opfamily_is_visible", "pg_statistics_obj_is_visible",
        "pg_ts_config_is_visible", "pg_ts_dict_is_visible", "pg_ts_parser_is_visible", "pg_ts_template_is_visible",
        "pg_collation_for", "to_regcollation", "to_regoper", "to_regoperator", "pg_get_statisticsobjdef",
        "pg_index_column_has_property", "pg_index_has_property", "pg_indexam_has_property",
        "pg_describe_object", "pg_identify_object", "pg_identify_object_as_address", "pg_get_object_address",
        "pg_get_catalog_foreign_keys", "pg_tablespace_databases")},
    **{f: _SERVER for f in (
        "pg_conf_load_time", "pg_control_checkpoint", "pg_control_init", "pg_control_recovery",
        "pg_control_system", "pg_current_logfile", "pg_jit_available", "pg_notification_queue_usage",
        "pg_trigger_depth", "pg_my_temp_schema", "pg_is_other_temp_schema", "inet_client_port",
        "current_query")},
    "pg_export_snapshot": "splitstream has no MVCC snapshots to share between sessions; run pg_dump -j with "
                          "--no-synchronized-snapshots (no writes meanwhile), or without -j.",
    "to_regproc": "splitstream does not implement to_regproc yet; query pg_proc by proname.",
    "to_regprocedure": "splitstream does not implement to_regprocedure yet; query pg_proc by proname.",
    "to_regrole": "splitstream does not implement to_regrole yet; query pg_roles by rolname.",
    "setseed": "splitstream does not implement setseed: random() is not reproducible by seed.",
    "normalize": "splitstream does not implement Unicode normalization (normalize, IS NORMALIZED) yet.",
    "parse_ident": "splitstream does not implement parse_ident yet; split_part on '.' covers unquoted names.",
    "pg_client_encoding": "splitstream speaks UTF8 only: SHOW client_encoding.",
    "to_ascii": "splitstream does not implement to_ascii (a LATIN1/LATIN2/WIN1250 conversion); its text is UTF8.",
    "unistr": "splitstream does not implement unistr yet; write the characters, or U&'\\0041' strings.",
    "convert": "splitstream's text is UTF8 only; use convert_to and convert_from.",
    "pg_sleep_for": "splitstream does not implement pg_sleep_for yet; use pg_sleep(seconds).",
    "pg_sleep_until": "splitstream does not implement pg_sleep_until yet; use pg_sleep(seconds).",
}
