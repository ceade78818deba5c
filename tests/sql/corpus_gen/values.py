"""Value pools of the generated corpus: SQL literals per type, ordinary,
NULL and edge values (empty, zero, negative, extremes, NaN, Infinity,
huge numerics, unicode).

Why literals with explicit casts: a call must bind to the overload under
test, so each literal names its type, except the ``unknown`` forms kept on
purpose (bare strings and integer literals) to exercise overload resolution.
"""
from __future__ import annotations

#: literals per type word of the function catalog (signatures.parse's words)
POOLS: dict[str, list[str]] = {
    "int2": ["0::int2", "7::int2", "(-3)::int2", "32767::int2", "(-32768)::int2", "NULL::int2"],
    "int4": ["0", "42", "-7", "2147483647", "-2147483648", "NULL::int4"],
    "int8": ["0::int8", "5000000000", "(-12)::int8", "9223372036854775807", "(-9223372036854775808)::int8",
             "NULL::int8"],
    "numeric": ["0::numeric", "1.5", "-2.5", "123456789012345678901234567890.123456789", "0.000000000000000000001",
                "'NaN'::numeric", "'Infinity'::numeric", "'-Infinity'::numeric", "NULL::numeric"],
    "float8": ["0::float8", "1.5::float8", "(-2.25)::float8", "1e308::float8", "'-0'::float8", "'NaN'::float8",
               "'Infinity'::float8", "'-Infinity'::float8", "NULL::float8"],
    "float4": ["0::float4", "1.5::float4", "(-0.1)::float4", "3.4e38::float4", "'NaN'::float4", "'Infinity'::float4",
               "NULL::float4"],
    "text": ["'hello'", "''", "'Ünïcödé ß'", "'  padded  '", "'a,b,,c'", "'MiXeD CaSe'", "'ab''cd'", "NULL::text"],
    "bytea": ["'\\x0102ff'::bytea", "''::bytea", "'\\x00'::bytea", "'abc'::bytea", "NULL::bytea"],
    "bool": ["true", "false", "NULL::bool"],
    "oid": ["0::oid", "23::oid", "1259::oid", "NULL::oid"],
    "name": ["'postgres'::name", "'nobody'::name", "NULL::name"],
    "interval": ["'1 day'::interval", "'-2 hours 3 minutes'::interval", "'0'::interval", "NULL::interval"],
}

#: smaller pools for arguments that are not the one under test
TYPICAL: dict[str, list[str]] = {
    "int2": ["2::int2", "NULL::int2"],
    "int4": ["2", "0", "-1", "NULL::int4"],
    "int8": ["3::int8", "NULL::int8"],
    "numeric": ["2.5", "0::numeric", "NULL::numeric"],
    "float8": ["2::float8", "NULL::float8"],
    "float4": ["2::float4", "NULL::float4"],
    "text": ["'l'", "''", "'xy'", "NULL::text"],
    "bytea": ["'\\x01'::bytea", "NULL::bytea"],
    "bool": ["true", "NULL::bool"],
}

#: argument pools for (function, position) whose meaning is not a plain value
ARGUMENT_POOLS: dict[tuple[str, int], list[str]] = {
    ("encode", 1): ["'hex'", "'base64'", "'escape'", "'bogus'"],
    ("decode", 0): ["'0102ff'", "'AQL/'", "'a\\\\000b'", "''", "'zz'", "NULL::text"],
    ("decode", 1): ["'hex'", "'base64'", "'escape'", "'bogus'"],
    ("chr", 0): ["65", "0", "946", "128512", "-1", "1114112", "NULL::int4"],
    ("repeat", 1): ["3", "0", "-2", "NULL::int4"],
    ("lpad", 1): ["8", "2", "0", "-1", "NULL::int4"],
    ("rpad", 1): ["8", "2", "0", "-1", "NULL::int4"],
    ("left", 1): ["2", "0", "-2", "100", "NULL::int4"],
    ("right", 1): ["2", "0", "-2", "100", "NULL::int4"],
    ("split_part", 2): ["1", "2", "-1", "0", "9", "NULL::int4"],
    ("substr", 1): ["2", "0", "-3", "100", "NULL::int4"],
    ("substr", 2): ["3", "0", "-1", "NULL::int4"],
    ("substring", 1): ["2", "0", "-3", "100", "NULL::int4"],
    ("substring", 2): ["3", "0", "-1", "NULL::int4"],
    ("round", 1): ["0", "2", "-1", "NULL::int4"],
    ("trunc", 1): ["0", "2", "-1", "NULL::int4"],
    ("to_hex", 0): ["0::int8", "255::int8", "(-1)::int8", "9223372036854775807", "NULL::int8"],
    ("width_bucket", 3): ["4", "1", "0", "NULL::int4"],
    ("pg_size_pretty", 0): ["0::int8", "1023::int8", "10240::int8", "10485760::int8", "1099511627776::int8",
                            "(-5000)::int8", "9223372036854775807", "NULL::int8"],
    ("pg_encoding_to_char", 0): ["6", "0", "-1", "999", "NULL::int4"],
    ("pg_char_to_encoding", 0): ["'UTF8'", "'SQL_ASCII'", "'latin1'", "'nope'", "NULL::text"],
    ("format_type", 0): ["23::oid", "25::oid", "1700::oid", "1043::oid", "1007::oid", "0::oid", "NULL::oid"],
    ("format_type", 1): ["NULL::int4", "-1", "14"],
    ("to_regtype", 0): ["'int'", "'integer[]'", "'varchar(3)'", "'nosuchtype'", "NULL::text"],
    ("to_regnamespace", 0): ["'public'", "'pg_catalog'", "'nosuch'", "NULL::text"],
    ("quote_ident", 0): ["'abc'", "'Abc'", "'a b'", "'select'", "'a\"b'", "''", "NULL::text"],
    ("initcap", 0): ["'hello wORLD'", "'élan vital'", "'a-b_c d1e'", "''", "NULL::text"],
    ("ascii", 0): ["'A'", "'é'", "''", "'€uro'", "NULL::text"],
    ("md5", 0): ["'hello'", "''", "'Ünïcödé'", "NULL::text"],
    ("starts_with", 1): ["'he'", "''", "'x'", "NULL::text"],
    ("strpos", 1): ["'l'", "''", "'lo'", "'zz'", "NULL::text"],
    ("translate", 1): ["'lo'", "''", "'é'", "NULL::text"],
    ("translate", 2): ["'01'", "'0'", "''", "NULL::text"],
    ("replace", 1): ["'l'", "''", "'hello'", "NULL::text"],
    ("replace", 2): ["'L'", "''", "'[x]'", "NULL::text"],
    ("string_to_array", 1): ["','", "''", "NULL::text", "'b'"],
    ("regexp_match", 1): ["'l+'", "'(h)(e)'", "'^$'", "'x?'", "'(unclosed'", "NULL::text"],
    ("regexp_match", 2): ["'i'", "'g'", "''", "'z'", "NULL::text"],
    ("regexp_replace", 1): ["'l'", "'(\\w)(\\w)'", "'^'", "'[aeiou]'", "'(bad'", "NULL::text"],
    ("regexp_replace", 2): ["'X'", "'\\2\\1'", "''", "'<&>'", "NULL::text"],
    ("regexp_replace", 3): ["'g'", "'gi'", "'i'", "'q'", "NULL::text"],
    ("date_part", 0): ["'year'", "'epoch'", "'bogus'"],
    ("split_part", 1): ["','", "''", "'b'", "NULL::text"],
    ("btrim", 1): ["' '", "'ab'", "''", "NULL::text"],
    ("ltrim", 1): ["' '", "'ab'", "''", "NULL::text"],
    ("rtrim", 1): ["' '", "'ab'", "''", "NULL::text"],
    ("concat_ws", 0): ["','", "''", "NULL::text"],
    ("to_char", 1): ["'9999'", "'FM999,999.00'", "'0000.9'", "'S999'", "'9.99EEEE'", "'RN'", "'PL999'", "'MI99.9'",
                     "'th'", "''", "NULL::text"],
}
