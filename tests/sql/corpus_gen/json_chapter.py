"""The JSON chapter (PostgreSQL 15 manual 9.16) as generated corpus
statements: the json/jsonb operators and processing functions over
documents of every shape (object, nested, array, scalar, null, empty) and
NULL, with literal calls and over a table (the vectorised path).

Why its own module: the JSON functions take documents and paths, not the
scalar pools the catalog-driven chapters draw from.
"""
from __future__ import annotations

import itertools

from .writer import Chapter

#: documents as SQL string literals: every JSON shape, nesting, numbers as written
DOCS = ["'{\"a\": 1, \"b\": [1, 2, {\"c\": null}], \"d\": \"x\"}'", "'[1, \"two\", null, true, [3, 4]]'",
        "'\"str\"'", "'42'", "'null'", "'{}'", "'[]'", "'{\"a\": {\"b\": {\"c\": 1.50}}, \"n\": null}'",
        "'[{\"k\": \"v\"}, {\"k\": null}]'", "'{\"z\": 1, \"a\": 2, \"a\": 3}'"]
KEYS = ["'a'", "'d'", "'missing'", "''", "NULL::text"]
INDEXES = ["0", "1", "-1", "10", "NULL::int4"]
PATHS = ["'{a}'", "'{b,2,c}'", "'{a,b,c}'", "'{0}'", "'{-1,0}'", "'{}'", "'{x,y}'", "NULL::text[]"]


def _docs(kind: str) -> list[str]:
    return [f"{d}::{kind}" for d in DOCS] + [f"NULL::{kind}"]


def _operators(ch: Chapter) -> None:
    ch.comment("-> ->> #> #>> over json and jsonb (keys, indexes, paths, NULLs)")
    for kind in ("json", "jsonb"):
        for d in _docs(kind):
            for k in KEYS:
                ch.select([f"{d} -> {k}", f"{d} ->> {k}"])
            for i in INDEXES:
                ch.select([f"{d} -> {i}", f"{d} ->> {i}"])
            for p in PATHS:
                ch.select([f"{d} #> {p}", f"{d} #>> {p}"])
    ch.comment("jsonb containment, existence, concatenation, deletion")
    small = ["'{\"a\": 1}'", "'{\"b\": [1, 2]}'", "'[1, 2]'", "'1'", "'{}'", "'[]'", "'\"a\"'"]
    for d in _docs("jsonb"):
        for s in small:
            ch.select([f"{d} @> {s}", f"{s} <@ {d}"])
            ch.select([f"{d} || {s}::jsonb"])
        for k in KEYS:
            ch.select([f"{d} ? {k}", f"{d} - {k}"])
        for i in INDEXES:
            ch.select([f"{d} - {i}"])
        for p in PATHS:
            ch.select([f"{d} #- {p}"])
        ch.select([f"{d} - ARRAY['a', 'd']"])
        for arr in ("ARRAY['a', 'd']", "ARRAY['q']", "ARRAY[]::text[]", "NULL::text[]"):
            ch.select([f"{d} ?| {arr}", f"{d} ?& {arr}"])


def _functions(ch: Chapter) -> None:
    ch.comment("processing functions over every document shape")
    for kind in ("json", "jsonb"):
        for d in _docs(kind):
            ch.select([f"{kind}_typeof({d})"])
            ch.select([f"{kind}_array_length({d})"])
            ch.select([f"{kind}_strip_nulls({d})"])
            for p in ("'a'", "'b', '2', 'c'", "'a', 'b'", "'0'"):
                ch.select([f"{kind}_extract_path({d}, {p})", f"{kind}_extract_path_text({d}, {p})"])
    for d in _docs("jsonb"):
        ch.select([f"jsonb_pretty({d})"])
        for p, v in itertools.product(("'{a}'", "'{b,0}'", "'{x}'", "'{0}'"), ("'9'", "'\"new\"'")):
            ch.select([f"jsonb_set({d}, {p}, {v})", f"jsonb_set({d}, {p}, {v}, false)"])
            ch.select([f"jsonb_insert({d}, {p}, {v})", f"jsonb_insert({d}, {p}, {v}, true)"])
        for p in ("'{a}'", "'{b,0}'", "'{x}'"):
            ch.select([f"jsonb_set_lax({d}, {p}, '7')", f"jsonb_set_lax({d}, {p}, NULL)"])
            for how in ("'delete_key'", "'return_target'", "'use_json_null'", "'raise_exception'", "'bogus'"):
                ch.select([f"jsonb_set_lax({d}, {p}, NULL, true, {how})"])


def _constructors(ch: Chapter) -> None:
    ch.comment("to_json/to_jsonb of typed values, builders")
    values = ["1", "1.50", "'1e3'::float8", "'NaN'::float8", "'Infinity'::numeric", "'text \"q\"'", "true",
              "NULL::int4", "ARRAY[1, 2]", "ARRAY['a', NULL]", "date '2020-01-02'",
              "timestamp '2020-01-02 03:04:05.5'", "'{\"a\": 1}'::json", "'[1, 2]'::jsonb", "''"]
    for v in values:
        ch.select([f"to_json({v})", f"to_jsonb({v})"])
    for args in ("1, 'a', NULL, true", "", "'x', ARRAY[1]", "1.5, 'q'::json"):
        ch.select([f"json_build_array({args})", f"jsonb_build_array({args})"])
    for args in ("'a', 1, 'b', NULL", "", "'a', 1, 'a', 2", "'k'", "NULL, 1", "1, 2"):
        ch.select([f"json_build_object({args})", f"jsonb_build_object({args})"])
    for arr in ("'{a,1,b,2}'", "'{{a,1},{b,2}}'", "'{a}'", "'{}'"):
        ch.select([f"json_object({arr}::text[])", f"jsonb_object({arr}::text[])"])
    ch.select(["json_object('{a,b}'::text[], '{1,2}'::text[])"])


def _over_table(ch: Chapter) -> None:
    t = "{{p}}_json"
    ch.comment("over a table: every shape in one batch")
    ch.stmt(f"CREATE TABLE {t} (id int, j json, b jsonb)")
    rows = [f"({i + 1}, {d}, {d})" for i, d in enumerate(DOCS)] + [f"({len(DOCS) + 1}, NULL, NULL)"]
    ch.stmt(f"INSERT INTO {t} VALUES {', '.join(rows)}")
    for e in ("j -> 'a'", "j ->> 'a'", "b -> 'a'", "b ->> 'd'", "b -> 1", "j #>> '{b,2}'", "b #> '{a,b}'",
              "jsonb_typeof(b)", "json_typeof(j)", "b @> '{\"a\": 1}'", "b ? 'a'", "b || '[9]'",
              "jsonb_strip_nulls(b)", "to_jsonb(id)", "jsonb_build_object('id', id, 'b', b)"):
        ch.select(["id", e], f"FROM {t} ORDER BY id")
    ch.stmt(f"DROP TABLE {t}")


def _set_returning(ch: Chapter) -> None:
    ch.comment("the set-returning functions of the chapter, in FROM and in the select list")
    for kind in ("json", "jsonb"):
        for d in _docs(kind)[:3] + _docs(kind)[5:7] + _docs(kind)[-1:]:
            ch.select(["*"], f"FROM {kind}_each({d}) ORDER BY 1", alias=False)
            ch.select(["key", "value"], f"FROM {kind}_each_text({d}) ORDER BY 1")
            ch.select(["*"], f"FROM {kind}_object_keys({d}) k ORDER BY 1", alias=False)
            ch.select([f"{kind}_array_elements({d})"])
            ch.select(["*"], f"FROM {kind}_array_elements_text({d}) WITH ORDINALITY e ORDER BY 2", alias=False)


def _aggregates(ch: Chapter) -> None:
    t = "{{p}}_jagg"
    ch.comment("JSON aggregates over typed columns with NULLs")
    ch.stmt(f"CREATE TABLE {t} (id int, k text, v numeric, j jsonb)")
    ch.stmt(f"INSERT INTO {t} VALUES (1, 'a', 1.50, '{{\"x\": 1}}'), (2, 'b', NULL, NULL), (3, 'c', -2, '[1]'),"
            " (4, 'a', 'NaN', '\"s\"')")
    for e in ("json_agg(v ORDER BY id)", "jsonb_agg(v ORDER BY id)", "json_agg(j ORDER BY id)",
              "jsonb_agg(j ORDER BY id)", "json_object_agg(k, v ORDER BY id)", "jsonb_object_agg(k, j ORDER BY id)",
              "jsonb_agg(k) FILTER (WHERE v IS NULL)", "json_agg(id ORDER BY id) FILTER (WHERE false)"):
        ch.select([e], f"FROM {t}")
    ch.select(["k", "jsonb_agg(v ORDER BY id)"], f"FROM {t} GROUP BY k ORDER BY k")
    ch.select(["json_object_agg(v, k)"], f"FROM {t} WHERE id = 1")
    ch.select(["jsonb_object_agg(k, v)"], f"FROM {t} WHERE id = 2")
    ch.select(["json_object_agg(j, k)"], f"FROM {t} WHERE id = 1")
    ch.stmt(f"DROP TABLE {t}")


def json(ch: Chapter) -> None:
    _operators(ch)
    _functions(ch)
    _constructors(ch)
    _set_returning(ch)
    _aggregates(ch)
    _over_table(ch)
