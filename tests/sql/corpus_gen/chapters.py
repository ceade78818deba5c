"""The chapters of PostgreSQL 15's function documentation, as corpus files.

Each chapter function fills a :class:`Chapter`: catalog-driven calls of its
scalar functions (``scalars``), then the operators, special syntax and
queries the catalog does not list (operators, LIKE, aggregates over tables,
window frames, set-returning functions in FROM).
"""
from __future__ import annotations

import itertools

from . import scalars
from .values import POOLS
from .writer import Chapter

MATH = {"abs", "cbrt", "ceil", "ceiling", "degrees", "div", "exp", "factorial", "floor", "gcd", "lcm", "ln", "log",
        "log10", "min_scale", "mod", "pi", "power", "pow", "radians", "round", "scale", "sign", "sqrt", "trim_scale",
        "trunc", "width_bucket", "acos", "acosd", "asin", "asind", "atan", "atand", "atan2", "atan2d", "cos", "cosd",
        "cot", "cotd", "sin", "sind", "tan", "tand", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "to_hex"}
STRING = {"ascii", "bit_length", "btrim", "char_length", "character_length", "chr", "concat", "concat_ws", "format",
          "initcap", "left", "length", "lower", "lpad", "ltrim", "md5", "octet_length", "quote_ident",
          "quote_literal", "quote_nullable", "repeat", "replace", "reverse", "right", "rpad", "rtrim", "split_part",
          "starts_with", "strpos", "substr", "substring", "translate", "upper", "string_to_array"}
BINARY = {"encode", "decode", "sha224", "sha256", "sha384", "sha512", "get_byte", "set_byte", "get_bit", "set_bit",
          "bit_count"}
PATTERN = {"regexp_match", "regexp_replace", "regexp_count", "regexp_like", "regexp_instr", "regexp_substr",
           "regexp_split_to_array"}
SYSINFO = {"pg_size_pretty", "pg_encoding_to_char", "pg_char_to_encoding", "format_type", "to_regtype",
           "to_regnamespace", "quote_ident"}

INTS = ["int2", "int4", "int8"]
NUMS = INTS + ["numeric", "float4", "float8"]


def _scalar_chapter(ch: Chapter, names: set[str], table: str) -> None:
    scalars.literal_calls(ch, names)
    scalars.create_table(ch, table)
    scalars.column_calls(ch, names, table)


def math(ch: Chapter) -> None:
    t = "{{p}}_math"
    _scalar_chapter(ch, MATH, t)
    ch.comment("arithmetic operators over every pair of numeric types (result types, overflow, division by zero)")
    for a, b in itertools.product(NUMS, NUMS):
        for op in ("+", "-", "*", "/"):
            x, y = POOLS[a][1], POOLS[b][1]
            ch.select([f"{x} {op} {y}"])
    for w in NUMS:
        pool = POOLS[w]
        for x in pool:
            ch.select([f"-{x}" if not x.startswith("-") else f"- ({x})", f"@ {x}"])
            for op, y in (("/", pool[0]), ("%", POOLS[w][1]), ("*", "2"), ("+", "1"), ("-", pool[-2])):
                ch.select([f"{x} {op} {y}"])
    for w in INTS:
        for x in POOLS[w]:
            ch.select([f"{x} & 6", f"{x} | 1", f"{x} # 5", f"~ {x}", f"{x} << 2", f"{x} >> 1"])
    for x in POOLS["float8"] + POOLS["numeric"]:
        ch.select([f"{x} ^ 2"])
        ch.select([f"|/ {x}"])
        ch.select([f"||/ {x}"])
    for x, y in (("2", "10"), ("2.0", "0.5"), ("0", "-1"), ("(-8)::float8", "1.0/3"), ("(-2)::numeric", "0.5"),
                 ("10::numeric", "-2"), ("1e10::float8", "1e10")):
        ch.select([f"{x} ^ {y}"])
    ch.comment("comparison of special values")
    for w in ("numeric", "float8", "float4"):
        for x, y in itertools.combinations(POOLS[w][-4:-1] + [POOLS[w][1]], 2):
            ch.select([f"{x} < {y}", f"{x} = {y}", f"{x} >= {y}"])
    ch.comment("over columns: operators and casts between numeric types")
    for a, b in itertools.product(["c_i2", "c_i4", "c_i8", "c_n", "c_f8"], repeat=2):
        ch.select(["id", f"{a} + {b}", f"{a} * 2", f"{a} < {b}"], f"FROM {t} ORDER BY id")
    for c in ("c_i2", "c_i4", "c_i8", "c_n", "c_f4", "c_f8"):
        for target in ("int2", "int4", "int8", "numeric", "numeric(10,2)", "float4", "float8", "text"):
            ch.select(["id", f"{c}::{target}"], f"FROM {t} ORDER BY id")
    ch.stmt(f"DROP TABLE {t}")


def strings(ch: Chapter) -> None:
    t = "{{p}}_str"
    _scalar_chapter(ch, STRING, t)
    ch.comment("special syntax: position, trim, overlay, substring ... from ... for, ||, collation-free comparisons")
    texts = POOLS["text"]
    for x in texts:
        ch.select([f"position('l' in {x})"])
        ch.select([f"trim({x})", f"trim(both 'a' from {x})", f"trim(leading from {x})", f"trim(trailing ' d' from {x})"])
        ch.select([f"substring({x} from 2)", f"substring({x} from 2 for 3)", f"substring({x} for 2)"])
        ch.select([f"overlay({x} placing 'ZZ' from 2)", f"overlay({x} placing 'ZZ' from 2 for 0)"])
        ch.select([f"{x} || 'tail'", f"{x} || 42", f"7 || {x}", f"{x} || NULL"])
        ch.select([f"{x} < 'm'", f"{x} = ''", f"upper({x}) = {x}"])
        ch.select([f"{x}::varchar(3)", f"{x}::char(4)", f"length({x}::char(10))"])
    for fmt, args in (("'%s-%s'", "'a', NULL"), ("'%I'", "'Foo Bar'"), ("'%L'", "'it''s'"), ("'%L'", "NULL::text"),
                      ("'%1$s %1$s'", "'x'"), ("'%5s|%-5s|'", "'ab', 'cd'"), ("'%%'", "''"), ("'%s'", "1.50"),
                      ("'%s %s'", "true, ARRAY[1,2]"), ("'%z'", "1"), ("'%s %s'", "'only one'")):
        ch.select([f"format({fmt}, {args})"])
    for args in ("'a', 1, NULL, 2.5", "NULL", "''", "true, 'x'", "ARRAY[1,2], '{}'::int[]"):
        ch.select([f"concat({args})", f"concat_ws('|', {args})"])
    for c in ("c_t",):
        ch.select(["id", f"position('a' in {c})", f"trim({c})", f"{c} || '!'", f"substring({c} from 2 for 2)"],
                  f"FROM {t} ORDER BY id")
        ch.select(["id", f"overlay({c} placing 'Q' from 1 for 1)", f"{c} || c_i4", f"length({c})"],
                  f"FROM {t} ORDER BY id")
    ch.stmt(f"DROP TABLE {t}")


def binary(ch: Chapter) -> None:
    t = "{{p}}_bin"
    _scalar_chapter(ch, BINARY | {"md5", "octet_length", "length", "btrim", "substr", "substring"}, t)
    ch.comment("bytea output, concatenation, comparison")
    for x in POOLS["bytea"]:
        ch.select([x])
        ch.select([f"{x} || '\\xff'::bytea", f"{x} = '\\x00'::bytea", f"{x} < 'b'::bytea"])
        ch.select([f"md5({x})", f"octet_length({x})", f"length({x})"])
        ch.select([f"encode({x}, 'hex')", f"encode({x}, 'base64')", f"encode({x}, 'escape')"])
        ch.select([f"sha256({x})", f"encode(sha512({x}), 'hex')"])
    for text in ("'\\x'", "'\\xzz'", "'\\x123'", "'a\\\\b'", "'\\001'", "'\\\\'"):
        ch.select([f"{text}::bytea"])
    ch.select(["id", "encode(c_b, 'hex')", "md5(c_b)", "c_b || c_b"], f"FROM {t} ORDER BY id")
    ch.select(["id", "convert_to(c_t, 'UTF8')", "octet_length(c_t)"], f"FROM {t} ORDER BY id")
    ch.stmt(f"DROP TABLE {t}")


def patterns(ch: Chapter) -> None:
    t = "{{p}}_pat"
    _scalar_chapter(ch, PATTERN, t)
    ch.comment("LIKE / ILIKE / SIMILAR TO / POSIX operators")
    subjects = POOLS["text"] + ["'100%'", "'a_b'", "'ABC'"]
    likes = ["'h%'", "'%l_o'", "''", "'%'", "'_'", "'100\\%'", "'a\\_b'", "'%É%'", "'HEL%'"]
    for s in subjects:
        for p in likes:
            ch.select([f"{s} LIKE {p}", f"{s} NOT LIKE {p}", f"{s} ILIKE {p}", f"{s} NOT ILIKE {p}"])
    for s in subjects[:6]:
        ch.select([f"{s} LIKE 'a!_b' ESCAPE '!'", f"{s} ~~ 'h%'", f"{s} ~~* 'H%'", f"{s} !~~ 'h%'"])
        for p in ("'(h|a)%'", "'%(l{2})%'", "'[a-c]%'", "'_*'", "'%'", "'h[^x]llo'"):
            ch.select([f"{s} SIMILAR TO {p}", f"{s} NOT SIMILAR TO {p}"])
        for p in ("'^h'", "'L+'", "'^$'", "'[[:alpha:]]+'", "'\\d'", "'(a|b),'", "'é'"):
            ch.select([f"{s} ~ {p}", f"{s} ~* {p}", f"{s} !~ {p}", f"{s} !~* {p}"])
    ch.select(["'x' ~ '('"])
    ch.select(["'x' LIKE 'a' ESCAPE 'ab'"])
    ch.select(["'abc' SIMILAR TO 'a' ESCAPE ''"])
    ch.select(["id", "c_t LIKE '%a%'", "c_t ILIKE '%A%'", "c_t ~ '^[a-z]'", "c_t SIMILAR TO '%(b|c)%'"],
              f"FROM {t} ORDER BY id")
    ch.select(["id", "regexp_replace(c_t, '[aeiou]', '*', 'g')", "regexp_match(c_t, '(\\w)(\\w)')"],
              f"FROM {t} ORDER BY id")
    ch.select(["id", "c_t"], f"FROM {t} WHERE c_t LIKE '%' ORDER BY id")
    ch.select(["id", "c_t"], f"FROM {t} WHERE c_t ~* 'C' ORDER BY id")
    for s, p in (("'a,b;c'", "'[,;]'"), ("'hello'", "''"), ("''", "','"), ("'a1b22c'", "'\\d+'")):
        ch.select([f"regexp_split_to_array({s}, {p})"])
        ch.stmt(f"SELECT * FROM regexp_split_to_table({s}, {p})")
        ch.select([f"regexp_split_to_table({s}, {p})"])
    ch.comment("regexp_matches and string_to_table: set-returning")
    for subject, pattern, flags in (("'abcabc'", "'(b)(c)'", "'g'"), ("'abcabc'", "'(b)(c)'", None),
                                    ("'aXbx'", "'x'", "'gi'"), ("'abc'", "'z'", "'g'"), ("''", "''", "'g'"),
                                    ("'abc'", "'(a)|(z)'", None), ("'abc'", "'b'", "'q'"), ("'abc'", "'b'", "'y'"),
                                    ("NULL::text", "'a'", None)):
        call = f"regexp_matches({subject}, {pattern}{', ' + flags if flags else ''})"
        ch.stmt(f"SELECT * FROM {call}")
        ch.select([call])
    for subject, delim, null in (("'a,b,,c'", "','", "''"), ("'abc'", "NULL", None), ("''", "','", None),
                                 ("'a b'", "''", None), ("NULL::text", "','", None)):
        call = f"string_to_table({subject}, {delim}{', ' + null if null else ''})"
        ch.stmt(f"SELECT * FROM {call}")
        ch.select([call, "1"])
    ch.select(["id", "regexp_matches(c_t, '[a-z]', 'g')"], f"FROM {t} ORDER BY id, 2")
    ch.stmt(f"DROP TABLE {t}")


def formatting(ch: Chapter) -> None:
    ch.comment("to_char over numbers (to_char of dates and times belongs to the date/time chapter)")
    fmts = ["'9999'", "'FM9999'", "'0000'", "'9,999.99'", "'FM999,999.00'", "'S9999'", "'9999MI'", "'PL9999'",
            "'SG9999'", "'99.9EEEE'", "'RN'", "'FMRN'", "'999th'", "'999TH'", "'L999'", "'99D99'", "'9G999'", "'V99'",
            "''", "'text 9 9'", "NULL::text"]
    vals = {"int4": ["0", "7", "-42", "1234", "2147483647", "NULL::int4"],
            "int8": ["(-9223372036854775808)::int8", "12345678901::int8"],
            "numeric": ["0.5", "-1234.567", "'NaN'::numeric", "123456789.987654321", "'Infinity'::numeric"],
            "float8": ["3.14159::float8", "(-0.5)::float8", "'NaN'::float8", "'Infinity'::float8", "1e20::float8"],
            "float4": ["2.5::float4", "(-1)::float4"]}
    for w, vs in vals.items():
        for v in vs:
            for f in fmts:
                ch.select([f"to_char({v}, {f})"])
    ch.comment("to_number")
    for s, f in (("'12,454.8-'", "'99G999D9S'"), ("'$1,234.56'", "'L9G999D99'"), ("'-12.3'", "'999.99'"),
                 ("'abc'", "'999'"), ("''", "'9'"), ("'1234'", "'99'"), ("'5 apples'", "'9'"), ("NULL::text", "'9'")):
        ch.select([f"to_number({s}, {f})"])


ARRAYS = ["ARRAY[1,2,3]", "ARRAY[]::int[]", "ARRAY[1,NULL,3]", "'{}'::int[]", "NULL::int[]", "'{{1,2},{3,4}}'::int[]",
          "'[0:2]={7,8,9}'::int[]"]
TEXT_ARRAYS = ["ARRAY['a','b',NULL]", "'{}'::text[]", "ARRAY['x y','\"q\"','']", "ARRAY['é']"]


def arrays(ch: Chapter) -> None:
    ch.comment("array functions over int and text arrays, empty, NULL, multi-dimensional, non-default bounds")
    for a in ARRAYS:
        ch.select([a])
        for dim in ("1", "2", "0"):
            ch.select([f"array_length({a}, {dim})", f"array_lower({a}, {dim})", f"array_upper({a}, {dim})"])
        ch.select([f"cardinality({a})", f"array_dims({a})", f"array_ndims({a})"])
        ch.select([f"array_to_string({a}, ',')", f"array_to_string({a}, ',', '*')"])
        ch.select([f"array_append({a}, 4)", f"array_prepend(0, {a})", f"array_cat({a}, ARRAY[5,6])"])
        ch.select([f"array_position({a}, 3)", f"array_position({a}, NULL::int)", f"array_positions({a}, 1)"])
        ch.select([f"array_remove({a}, 1)", f"array_remove({a}, NULL::int)", f"array_replace({a}, 3, 30)"])
        ch.select([f"{a} || 9", f"{a} || ARRAY[9]", f"{a} = ARRAY[1,2,3]", f"{a} @> ARRAY[1]", f"{a} <@ ARRAY[1,2,3]",
                   f"{a} && ARRAY[3]"])
        ch.select([f"({a})[1]", f"({a})[2:3]", f"({a})[:1]", f"({a})[0]"])
        ch.select([f"trim_array({a}, 1)"])
        ch.select([f"3 = ANY({a})", f"3 <> ALL({a})", f"NULL::int = ANY({a})"])
        ch.stmt(f"SELECT * FROM unnest({a})")
        ch.select([f"unnest({a})"])
    for a in TEXT_ARRAYS:
        ch.select([a])
        ch.select([f"array_to_string({a}, '-')", f"array_to_string({a}, '-', 'N')", f"cardinality({a})"])
        ch.select([f"array_append({a}, 'z')", f"array_cat({a}, {a})", f"array_position({a}, 'b')"])
        ch.select([f"{a}::text", f"array_remove({a}, 'a')", f"'b' = ANY({a})"])
    for s, d in (("'a,b,,c'", "','"), ("'abc'", "''"), ("'abc'", "NULL"), ("''", "','"), ("'a b'", "' '"),
                 ("NULL", "','")):
        ch.select([f"string_to_array({s}, {d})", f"string_to_array({s}, {d}, 'b')"])
    ch.select(["array_fill(7, ARRAY[3])", "array_fill('x'::text, ARRAY[2,2])", "array_fill(1, ARRAY[2], ARRAY[0])"])
    ch.select(["ARRAY[1,2] || ARRAY[[3,4]]"])
    ch.select(["ARRAY[1.5, 2]", "ARRAY[1, 2.5]::int[]", "ARRAY['1','2']::int[]", "'{1,2}'::numeric[]"])
    ch.select(["ARRAY[ARRAY[1,2],ARRAY[3]]"])
    ch.select(["array_cat(ARRAY[1], ARRAY['a'])"])
    t = "{{p}}_arr"
    ch.stmt(f"CREATE TABLE {t} (id int, a int[], t text[])")
    ch.stmt(f"INSERT INTO {t} VALUES (1, ARRAY[1,2,3], ARRAY['a','b']), (2, '{{}}', '{{}}'), (3, NULL, NULL),"
            " (4, ARRAY[NULL,5]::int[], ARRAY[NULL,'z']), (5, ARRAY[2,2,2], ARRAY['é'])")
    for e in ("cardinality(a)", "array_length(a, 1)", "array_to_string(a, ',', '?')", "array_append(a, id)",
              "array_position(a, 2)", "array_remove(a, 2)", "a[1]", "a[2:]", "a || id", "t[1]",
              "array_cat(a, a)", "array_to_string(t, ';')", "2 = ANY(a)", "a @> ARRAY[2]", "array_upper(a, 1)",
              "array_prepend(id, a)", "array_dims(a)", "array_replace(a, 2, 0)", "array_positions(a, 2)"):
        ch.select(["id", e], f"FROM {t} ORDER BY id")
    ch.select(["id", "unnest(a)"], f"FROM {t} ORDER BY id, 2")
    ch.stmt(f"SELECT id, x FROM {t}, unnest(a) AS x ORDER BY id, x")
    ch.stmt(f"SELECT id, x, n FROM {t}, unnest(a) WITH ORDINALITY AS u(x, n) ORDER BY id, n")
    ch.comment("array values ordered and compared (element by element, NULL elements last)")
    ch.select(["id", "a"], f"FROM {t} ORDER BY a, id")
    ch.select(["id", "a"], f"FROM {t} ORDER BY a DESC NULLS LAST, id")
    ch.select(["id", "a < ARRAY[2]", "a = ARRAY[2,2,2]", "a >= '{}'", "t > ARRAY['a']"], f"FROM {t} ORDER BY id")
    ch.select(["max(a)", "min(a)", "max(t)"], f"FROM {t}")
    ch.comment("function items in FROM read earlier items (implicitly LATERAL)")
    ch.stmt(f"SELECT {t}.id, unnest FROM {t}, unnest({t}.a) ORDER BY 1, 2")
    ch.stmt(f"SELECT id, u.* FROM {t}, unnest(t) u ORDER BY 1, 2")
    ch.stmt(f"SELECT id, g FROM {t}, generate_series(1, cardinality(a)) g ORDER BY 1, 2")
    ch.stmt(f"SELECT id, s FROM {t}, regexp_split_to_table(array_to_string(t, ','), ',') s ORDER BY 1, 2")
    ch.stmt(f"SELECT count(*) FROM {t} x, unnest(x.a) e, {t} y WHERE y.id = x.id")
    ch.stmt(f"SELECT id, x FROM {t}, unnest(nosuch) x", error="42703")
    ch.stmt(f"DROP TABLE {t}")


AGG_TABLE_ROWS = ("(1, 'a', 1, 10, 1.5, 0.5, true, 'x', '\\x01'),"
                  " (2, 'a', 2, NULL, 2.25, NULL, false, 'y', '\\x02'),"
                  " (3, 'a', NULL, 30, NULL, 'NaN', NULL, NULL, NULL),"
                  " (4, 'b', 4, 9223372036854775807, 'NaN', 'Infinity', true, 'é', '\\xff'),"
                  " (5, 'b', 4, 1, -0.000001, -1e308, true, '', ''),"
                  " (6, 'c', NULL, NULL, NULL, NULL, NULL, NULL, NULL),"
                  " (7, 'd', -2147483648, -1, 123456789012345678901234567890, 1e308, false, 'zz', '\\x00')")
AGG_COLUMNS = {"i": "int4", "j": "int8", "n": "numeric", "f": "float8", "b": "bool", "s": "text", "y": "bytea"}


def _agg_calls() -> list[tuple[str, str]]:
    """(call, the column type word it reads)."""
    out = [("count(*)", ""), ("count(i)", "int4"), ("count(DISTINCT i)", "int4"), ("count(s)", "text")]
    for col, w in AGG_COLUMNS.items():
        if w in ("int4", "int8", "numeric", "float8"):
            for f in ("sum", "avg", "min", "max", "stddev", "stddev_samp", "stddev_pop", "variance", "var_pop"):
                out.append((f"{f}({col})", w))
            out.append((f"sum(DISTINCT {col})", w))
            out.append((f"sum({col}::float4)", w))
        if w == "text":
            out += [(f"min({col})", w), (f"max({col})", w), (f"string_agg({col}, ',')", w),
                    (f"string_agg({col}, ',' ORDER BY {col})", w), (f"string_agg(DISTINCT {col}, '')", w)]
        if w == "bool":
            out += [(f"bool_and({col})", w), (f"bool_or({col})", w), (f"every({col})", w)]
        if w == "bytea":
            out += [(f"string_agg({col}, '\\x2c'::bytea)", w)]
    out += [("array_agg(i ORDER BY id)", "int4"), ("array_agg(s ORDER BY id DESC)", "text"),
            ("array_agg(DISTINCT i)", "int4"), ("array_agg(n ORDER BY id)", "numeric"),
            ("percentile_cont(0.5) WITHIN GROUP (ORDER BY f)", "float8"),
            ("percentile_cont(0.25) WITHIN GROUP (ORDER BY i)", "int4"),
            ("percentile_disc(0.5) WITHIN GROUP (ORDER BY n)", "numeric"),
            ("percentile_disc(0) WITHIN GROUP (ORDER BY s)", "text"),
            ("mode() WITHIN GROUP (ORDER BY i)", "int4"), ("mode() WITHIN GROUP (ORDER BY s)", "text"),
            ("sum(i) FILTER (WHERE b)", "int4"), ("count(*) FILTER (WHERE n > 0)", "numeric"),
            ("max(f) FILTER (WHERE id > 3)", "float8"), ("avg(i::int2)", "int4"), ("sum(i::int2)", "int4"),
            ("min(i::int2)", "int4"), ("max(id::oid)", ""), ("min(s::char(3))", "text"),
            ("bit_and(i)", "int4"), ("bit_or(i)", "int4"), ("bit_xor(i)", "int4")]
    return out


def aggregates(ch: Chapter) -> None:
    t = "{{p}}_agg"
    cols = ", ".join(f"{c} {w}" for c, w in AGG_COLUMNS.items())
    ch.stmt(f"CREATE TABLE {t} (id int, g text, {cols})")
    ch.stmt(f"INSERT INTO {t} VALUES {AGG_TABLE_ROWS}")
    ch.comment("every aggregate: whole table, per group, over no rows, over all-NULL groups")
    for call, _w in _agg_calls():
        ch.select([call], f"FROM {t}")
        ch.select(["g", call], f"FROM {t} GROUP BY g ORDER BY g")
        ch.select([call], f"FROM {t} WHERE false")
        ch.select([call], f"FROM {t} WHERE id = 6")
    ch.comment("aggregates in expressions, HAVING, ORDER BY, over literals")
    ch.select(["g", "sum(i) + 1", "count(*) * 2", "max(s) || '!'"], f"FROM {t} GROUP BY g ORDER BY g")
    ch.select(["g"], f"FROM {t} GROUP BY g HAVING count(i) > 1 ORDER BY g")
    ch.select(["g", "avg(n)"], f"FROM {t} GROUP BY g ORDER BY avg(n) NULLS FIRST, g")
    ch.select(["count(*)", "sum(1)", "avg(2)", "max('x'::text)", "min(NULL::int)", "sum(NULL::numeric)"])
    ch.select(["sum(x)", "avg(x)", "count(x)"], "FROM (VALUES (1), (2), (NULL::int)) v(x)")
    ch.select(["sum(x)"], "FROM (VALUES (2147483647), (2147483647)) v(x)")
    ch.select(["sum(x)", "avg(x)"], "FROM (VALUES (9223372036854775807), (9223372036854775807)) v(x)")
    ch.select(["sum(x)", "avg(x)", "min(x)", "max(x)"], "FROM (VALUES ('NaN'::numeric), (1)) v(x)")
    ch.select(["sum(x)", "avg(x)"], "FROM (VALUES ('Infinity'::float8), ('-Infinity'::float8)) v(x)")
    ch.select(["sum(x)", "avg(x)"], "FROM (VALUES ('Infinity'::numeric), (1)) v(x)")
    ch.select(["stddev(x)", "variance(x)"], "FROM (VALUES (1.0), (2.0), (4.0)) v(x)")
    ch.select(["array_agg(x)"], "FROM (VALUES (ARRAY[1,2]), (ARRAY[3,4])) v(x)")
    ch.stmt(f"SELECT sum(s) FROM {t}", error="42883")
    ch.stmt(f"SELECT avg(b) FROM {t}", error="42883")
    ch.stmt(f"SELECT sum(sum(i)) FROM {t}", error="42803")
    ch.stmt(f"SELECT g, i FROM {t} GROUP BY g", error="42803")
    ch.stmt(f"SELECT count(*) FROM {t} WHERE sum(i) > 0", error="42803")
    ch.stmt(f"SELECT percentile_cont(2) WITHIN GROUP (ORDER BY i) FROM {t}", error="22003")
    ch.stmt(f"DROP TABLE {t}")


FRAMES = ["", "ORDER BY id", "PARTITION BY g ORDER BY id", "ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING",
          "ORDER BY id ROWS UNBOUNDED PRECEDING", "ORDER BY v RANGE BETWEEN 1 PRECEDING AND CURRENT ROW",
          "ORDER BY v RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
          "ORDER BY v GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING",
          "ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW",
          "ORDER BY v GROUPS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE GROUP",
          "ORDER BY v RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING EXCLUDE TIES",
          "PARTITION BY g ORDER BY v DESC NULLS LAST ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING"]
WINDOW_AGGS = ["sum(v)", "avg(v)", "count(*)", "count(v)", "min(v)", "max(v)", "sum(i)", "array_agg(id)",
               "string_agg(g, '')", "bool_and(v > 2)", "stddev(v)", "first_value(v)", "last_value(v)",
               "nth_value(v, 2)"]
RANKING = ["row_number()", "rank()", "dense_rank()", "percent_rank()", "cume_dist()", "ntile(3)", "ntile(1)",
           "lag(v)", "lag(v, 2)", "lag(v, 1, -1.0)", "lead(v)", "lead(i, 2, 0)", "lead(g, -1)", "lag(v, 0)"]


def windows(ch: Chapter) -> None:
    t = "{{p}}_win"
    ch.stmt(f"CREATE TABLE {t} (id int, g text, v numeric, i int)")
    ch.stmt(f"INSERT INTO {t} VALUES (1, 'a', 1.5, 10), (2, 'a', 2, NULL), (3, 'b', NULL, 3), (4, 'b', 4, 4),"
            " (5, 'b', 5.25, -5), (6, 'a', 2, 6), (7, 'c', 4, 2147483647), (8, 'c', 0, -2147483648)")
    ch.comment("aggregates and value functions over every frame kind, aliased and unaliased")
    for f in WINDOW_AGGS:
        for frame in FRAMES:
            for alias in (False, True):
                ch.select(["id", f"{f} OVER ({frame})"], f"FROM {t} ORDER BY id", alias=alias)
    ch.comment("ranking, lag/lead, ntile (frame-independent), aliased and unaliased")
    for f in RANKING:
        for over in ("ORDER BY id", "PARTITION BY g ORDER BY v, id", "ORDER BY v DESC NULLS LAST, id"):
            for alias in (False, True):
                ch.select(["id", f"{f} OVER ({over})"], f"FROM {t} ORDER BY id", alias=alias)
    ch.comment("named windows, several windows, windows over groups, expressions of windows")
    ch.select(["id", "sum(v) OVER w", "rank() OVER w"], f"FROM {t} WINDOW w AS (PARTITION BY g ORDER BY id) ORDER BY id")
    ch.select(["id", "sum(v) OVER (w ROWS 1 PRECEDING)"], f"FROM {t} WINDOW w AS (ORDER BY id) ORDER BY id")
    ch.select(["g", "count(*)", "rank() OVER (ORDER BY count(*) DESC, g)"], f"FROM {t} GROUP BY g ORDER BY g")
    ch.select(["id", "row_number() OVER (ORDER BY id) * 10", "v - lag(v) OVER (ORDER BY id)"],
              f"FROM {t} ORDER BY id")
    ch.select(["id", "sum(i) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"],
              f"FROM {t} ORDER BY id")
    ch.select(["id", "count(*) FILTER (WHERE v > 2) OVER (ORDER BY id)"], f"FROM {t} ORDER BY id")
    ch.select(["id", "sum(v) OVER (ORDER BY id RANGE 2 PRECEDING)"], f"FROM {t} ORDER BY id")
    ch.comment("frame errors")
    ch.stmt(f"SELECT sum(v) OVER (ROWS -1 PRECEDING) FROM {t}", error="22013")
    ch.stmt(f"SELECT sum(v) OVER (ORDER BY g RANGE 1 PRECEDING) FROM {t}", error="0A000")
    ch.stmt(f"SELECT sum(v) OVER (RANGE 1 PRECEDING) FROM {t}", error="42P20")
    ch.stmt(f"SELECT sum(v) OVER (GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM {t}", error="42P20")
    ch.stmt(f"SELECT sum(v) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED FOLLOWING AND CURRENT ROW) FROM {t}",
            error="42P20")
    ch.stmt(f"SELECT ntile(0) OVER (ORDER BY id) FROM {t}", error="22014")
    ch.stmt(f"SELECT nth_value(v, 0) OVER (ORDER BY id) FROM {t}", error="22016")
    ch.stmt(f"SELECT id FROM {t} WHERE rank() OVER (ORDER BY id) > 1", error="42P20")
    ch.stmt(f"SELECT sum(rank() OVER (ORDER BY id)) FROM {t}", error="42803")
    ch.stmt(f"DROP TABLE {t}")


def srfs(ch: Chapter) -> None:
    ch.comment("generate_series and friends, in FROM and in the select list, with PostgreSQL's column names")
    series = [("1", "5"), ("5", "1"), ("1", "10", "3"), ("10", "1", "-4"), ("1", "1"), ("0", "0", "1"),
              ("1::int8", "3::int8"), ("1.5", "4"), ("0.1", "0.5", "0.1"), ("1", "3", "0"), ("NULL::int", "3"),
              ("2147483646", "2147483647"), ("1::int2", "3::int2"), ("'NaN'::numeric", "3")]
    for args in series:
        a = ", ".join(args)
        ch.stmt(f"SELECT * FROM generate_series({a})")
        ch.select([f"generate_series({a})"])
        ch.stmt(f"SELECT g FROM generate_series({a}) g")
        ch.stmt(f"SELECT g.* FROM generate_series({a}) AS g(x)")
    ch.stmt("SELECT s, s * 2 FROM generate_series(1, 3) s ORDER BY s DESC")
    ch.stmt("SELECT count(*), sum(s) FROM generate_series(1, 1000) s")
    ch.stmt("SELECT * FROM generate_series(1, 3) WITH ORDINALITY")
    ch.stmt("SELECT * FROM generate_series(1, 2) a, generate_series(1, 2) b ORDER BY 1, 2")
    ch.stmt("SELECT generate_series(1, 2), generate_series(1, 3)")
    ch.stmt("SELECT generate_series(1, 2) AS a, unnest(ARRAY['x','y','z']) AS b")
    ch.stmt("SELECT * FROM unnest(ARRAY[1,2], ARRAY['a','b','c'])")
    ch.stmt("SELECT * FROM unnest(ARRAY[1,2], ARRAY['a','b','c']) u(x)")
    ch.stmt("SELECT * FROM unnest('{}'::int[], NULL::text[], ARRAY[true])")
    ch.stmt("SELECT unnest(ARRAY[1], ARRAY['a'])", error="42883")
    ch.stmt("SELECT * FROM generate_subscripts(ARRAY[5,6,7], 1)")
    ch.stmt("SELECT generate_subscripts('[2:4]={1,2,3}'::int[], 1)")
    ch.stmt("SELECT * FROM generate_subscripts(ARRAY[5,6,7], 1, true)")
    ch.stmt("SELECT * FROM generate_series('2024-01-01'::timestamp, '2024-01-02'::timestamp, '6 hours'::interval)")
    ch.stmt("SELECT * FROM generate_series(1, 10, 0)", error="22023")
    ch.stmt("SELECT * FROM generate_series(1.0, 2.0, 0)", error="22023")
    ch.stmt("SELECT * FROM generate_series('a', 'b')", error="42725")
    ch.stmt("SELECT x FROM generate_series(1, 3) x WHERE x > 1 ORDER BY x")
    ch.stmt("SELECT (SELECT max(x) FROM generate_series(1, n) x) FROM generate_series(1, 3) n ORDER BY 1")


def sysinfo(ch: Chapter) -> None:
    ch.comment("system information: deterministic ones by value, the others by type and column name")
    scalars.literal_calls(ch, SYSINFO)
    for f in ("current_database()", "current_user", "session_user", "current_role", "user", "current_schema",
              "current_schema()", "current_catalog", "pg_is_in_recovery()"):
        ch.select([f])
    for f in ("version()", "pg_backend_pid()", "now()", "current_timestamp", "txid_current()", "pg_current_xact_id()",
              "inet_server_port()", "pg_postmaster_start_time()", "random()", "gen_random_uuid()",
              "clock_timestamp()", "statement_timestamp()", "transaction_timestamp()", "localtimestamp",
              "current_date", "current_time"):
        ch.select([f"pg_typeof({f})"])
        ch.select([f"{f} IS NOT NULL"])
    ch.select(["version() LIKE 'PostgreSQL 15%'"])
    for v in ("1", "1::int2", "1.5", "'x'", "'x'::text", "NULL", "ARRAY[1]", "1e10", "true", "'1 day'::interval",
              "now()", "'{}'::text[]", "9223372036854775807", "1::oid", "'t'::name", "'a'::char", "'b'::varchar"):
        ch.select([f"pg_typeof({v})"])
    for reg in ("'pg_class'::regclass", "'int4'::regtype", "'pg_catalog'::regnamespace", "'integer'::regtype::oid",
                "'pg_class'::regclass::oid", "'now'::regproc"):
        ch.select([reg])
    for tbl in ("pg_class", "pg_namespace", "nosuch"):
        ch.select([f"to_regclass('{tbl}')", f"to_regclass('{tbl}') IS NULL"])
    t = "{{p}}_sys"
    ch.stmt(f"CREATE TABLE {t} (a int)")
    for priv in ("'SELECT'", "'INSERT'", "'select, update'", "'bogus'", "'SELECT WITH GRANT OPTION'"):
        ch.select([f"has_table_privilege('{t}', {priv})"])
        ch.select([f"has_column_privilege('{t}', 'a', {priv})"])
        ch.select([f"has_schema_privilege('public', {priv.replace('SELECT', 'USAGE')})"])
    ch.select(["has_database_privilege(current_database(), 'CONNECT')", "has_schema_privilege('public', 'CREATE')"])
    ch.stmt(f"SELECT has_table_privilege('{t}_nosuch', 'SELECT')", error="42P01")
    ch.stmt(f"DROP TABLE {t}")
    ch.select(["current_setting('datestyle')", "current_setting('search_path')", "current_setting('nosuch', true)"])
    ch.stmt("SELECT current_setting('nosuch.setting')", error="42704")
    ch.select(["pg_typeof(pg_table_is_visible('pg_class'::regclass))", "pg_table_is_visible('pg_class'::regclass)"])
    ch.select(["obj_description('pg_class'::regclass, 'pg_class') IS NULL"])
    ch.select(["pg_get_userbyid(10) IS NOT NULL", "pg_typeof(pg_get_userbyid(10))"])
