"""The functions of PostgreSQL 15's documentation chapters that issue 15
covers (9.3 mathematical ... 9.26 system information), by chapter.

Why a hand-kept list checked against pg_proc: the manual's tables are the
contract, not pg_proc (which also holds internal support functions); the
coverage test checks each name exists in a real PostgreSQL 15 so a typo
here cannot hide a gap.  ``SYNTAX`` names are SQL keywords PostgreSQL
parses into something else (CURRENT_DATE, LOCALTIME ...): not in pg_proc.
"""
from __future__ import annotations

CHAPTERS: dict[str, set[str]] = {
    "9.3 mathematical": {
        "abs", "cbrt", "ceil", "ceiling", "degrees", "div", "exp", "factorial", "floor", "gcd", "lcm", "ln", "log",
        "log10", "min_scale", "mod", "pi", "power", "radians", "round", "scale", "sign", "sqrt", "trim_scale",
        "trunc", "width_bucket", "random", "setseed", "acos", "acosd", "asin", "asind", "atan", "atand", "atan2",
        "atan2d", "cos", "cosd", "cot", "cotd", "sin", "sind", "tan", "tand", "sinh", "cosh", "tanh", "asinh",
        "acosh", "atanh"},
    "9.4 string": {
        "bit_length", "char_length", "character_length", "lower", "normalize", "octet_length", "overlay",
        "position", "substring", "upper", "ascii", "btrim", "chr", "concat", "concat_ws", "format", "initcap",
        "left", "length", "lpad", "ltrim", "md5", "parse_ident", "pg_client_encoding", "quote_ident",
        "quote_literal", "quote_nullable", "regexp_count", "regexp_instr", "regexp_like", "regexp_match",
        "regexp_matches", "regexp_replace", "regexp_split_to_array", "regexp_split_to_table", "regexp_substr",
        "repeat", "replace", "reverse", "right", "rpad", "rtrim", "split_part", "starts_with", "string_to_array",
        "string_to_table", "strpos", "substr", "to_ascii", "to_hex", "translate", "unistr"},
    "9.5 binary string": {
        "bit_count", "get_bit", "get_byte", "set_bit", "set_byte", "sha224", "sha256", "sha384", "sha512",
        "convert", "convert_from", "convert_to", "encode", "decode"},
    "9.8 data type formatting": {"to_char", "to_date", "to_number", "to_timestamp"},
    "9.9 date/time": {
        "age", "clock_timestamp", "current_date", "current_time", "current_timestamp", "date_bin", "date_part",
        "date_trunc", "extract", "isfinite", "justify_days", "justify_hours", "justify_interval", "localtime",
        "localtimestamp", "make_date", "make_interval", "make_time", "make_timestamp", "make_timestamptz", "now",
        "statement_timestamp", "timeofday", "transaction_timestamp", "pg_sleep", "pg_sleep_for",
        "pg_sleep_until"},
    "9.16 JSON": {
        "to_json", "to_jsonb", "array_to_json", "row_to_json", "json_build_array", "jsonb_build_array",
        "json_build_object", "jsonb_build_object", "json_object", "jsonb_object", "json_array_elements",
        "jsonb_array_elements", "json_array_elements_text", "jsonb_array_elements_text", "json_array_length",
        "jsonb_array_length", "json_each", "jsonb_each", "json_each_text", "jsonb_each_text", "json_extract_path",
        "jsonb_extract_path", "json_extract_path_text", "jsonb_extract_path_text", "json_object_keys",
        "jsonb_object_keys", "json_populate_record", "jsonb_populate_record", "json_populate_recordset",
        "jsonb_populate_recordset", "json_to_record", "jsonb_to_record", "json_to_recordset", "jsonb_to_recordset",
        "jsonb_set", "jsonb_set_lax", "jsonb_insert", "json_strip_nulls", "jsonb_strip_nulls", "jsonb_path_exists",
        "jsonb_path_match", "jsonb_path_query", "jsonb_path_query_array", "jsonb_path_query_first",
        "jsonb_path_exists_tz", "jsonb_path_match_tz", "jsonb_path_query_tz", "jsonb_path_query_array_tz",
        "jsonb_path_query_first_tz", "jsonb_pretty", "json_typeof", "jsonb_typeof"},
    "9.19 arrays": {
        "array_append", "array_cat", "array_dims", "array_fill", "array_length", "array_lower", "array_ndims",
        "array_position", "array_positions", "array_prepend", "array_remove", "array_replace", "array_to_string",
        "array_upper", "cardinality", "trim_array", "unnest"},
    "9.21 aggregates": {
        "array_agg", "avg", "bit_and", "bit_or", "bit_xor", "bool_and", "bool_or", "count", "every", "json_agg",
        "jsonb_agg", "json_object_agg", "jsonb_object_agg", "max", "min", "string_agg", "sum", "corr",
        "covar_pop", "covar_samp", "regr_avgx", "regr_avgy", "regr_count", "regr_intercept", "regr_r2",
        "regr_slope", "regr_sxx", "regr_sxy", "regr_syy", "stddev", "stddev_pop", "stddev_samp", "variance",
        "var_pop", "var_samp", "mode", "percentile_cont", "percentile_disc", "rank", "dense_rank", "percent_rank",
        "cume_dist"},
    "9.22 window": {
        "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value",
        "last_value", "nth_value"},
    "9.25 set returning": {"generate_series", "generate_subscripts"},
    "9.26 system information": {
        "current_catalog", "current_database", "current_query", "current_role", "current_schema",
        "current_schemas", "current_user", "inet_client_addr", "inet_client_port", "inet_server_addr",
        "inet_server_port", "pg_backend_pid", "pg_blocking_pids", "pg_conf_load_time", "pg_current_logfile",
        "pg_my_temp_schema", "pg_is_other_temp_schema", "pg_jit_available", "pg_listening_channels",
        "pg_notification_queue_usage", "pg_postmaster_start_time", "pg_safe_snapshot_blocking_pids",
        "pg_trigger_depth", "session_user", "user", "version",
        "has_any_column_privilege", "has_column_privilege", "has_database_privilege",
        "has_foreign_data_wrapper_privilege", "has_function_privilege", "has_language_privilege",
        "has_parameter_privilege", "has_schema_privilege", "has_sequence_privilege", "has_server_privilege",
        "has_table_privilege", "has_tablespace_privilege", "has_type_privilege", "pg_has_role",
        "row_security_active", "acldefault", "aclexplode", "makeaclitem",
        "pg_collation_is_visible", "pg_conversion_is_visible", "pg_function_is_visible", "pg_opclass_is_visible",
        "pg_operator_is_visible", "pg_opfamily_is_visible", "pg_statistics_obj_is_visible", "pg_table_is_visible",
        "pg_ts_config_is_visible", "pg_ts_dict_is_visible", "pg_ts_parser_is_visible", "pg_ts_template_is_visible",
        "pg_type_is_visible", "format_type", "pg_get_catalog_foreign_keys", "pg_get_constraintdef", "pg_get_expr",
        "pg_get_functiondef", "pg_get_function_arguments", "pg_get_function_identity_arguments",
        "pg_get_function_result", "pg_get_indexdef", "pg_get_keywords", "pg_get_ruledef",
        "pg_get_serial_sequence", "pg_get_statisticsobjdef", "pg_get_triggerdef", "pg_get_userbyid",
        "pg_get_viewdef", "pg_index_column_has_property", "pg_index_has_property", "pg_indexam_has_property",
        "pg_options_to_table", "pg_tablespace_databases", "pg_tablespace_location", "pg_typeof",
        "pg_collation_for", "to_regclass", "to_regcollation", "to_regnamespace", "to_regoper", "to_regoperator",
        "to_regproc", "to_regprocedure", "to_regrole", "to_regtype", "pg_describe_object", "pg_identify_object",
        "pg_identify_object_as_address", "pg_get_object_address", "col_description", "obj_description",
        "shobj_description", "pg_current_xact_id", "pg_current_xact_id_if_assigned", "pg_xact_status",
        "pg_current_snapshot", "pg_snapshot_xip", "pg_snapshot_xmax", "pg_snapshot_xmin",
        "pg_visible_in_snapshot", "txid_current", "txid_current_if_assigned", "txid_current_snapshot",
        "txid_snapshot_xip", "txid_snapshot_xmax", "txid_snapshot_xmin", "txid_visible_in_snapshot",
        "txid_status", "pg_xact_commit_timestamp", "pg_xact_commit_timestamp_origin", "pg_last_committed_xact",
        "pg_control_checkpoint", "pg_control_system", "pg_control_init", "pg_control_recovery"},
}

#: names the grammar turns into other calls or expressions (not pg_proc rows)
SYNTAX = {"current_catalog", "current_date", "current_role", "current_schema", "current_time",
          "current_timestamp", "current_user", "localtime", "localtimestamp", "session_user", "user", "extract",
          "position", "substring", "overlay", "normalize", "trim", "coalesce", "nullif"}


def documented() -> set[str]:
    """Every documented name of the chapters above."""
    return set().union(*CHAPTERS.values())
