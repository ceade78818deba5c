"""Issue 15's NULL property: every function the catalog declares STRICT
returns NULL when any argument is NULL -- called once per overload and
argument position, with the other arguments given ordinary values of their
types."""
from __future__ import annotations

from splitstream.catalog.datatypes import sqltypes
from splitstream.executor.execution import functions, proc_catalog, signatures
from splitstream.protocol import oids as t
from tests.support.diff import execute

#: an ordinary value of each argument type (as SQL)
SAMPLES = {
    t.TEXT: "'a'", t.INT2: "1::int2", t.INT4: "1", t.INT8: "1::int8", t.FLOAT4: "1::float4", t.FLOAT8: "1::float8",
    t.NUMERIC: "1.5", t.BOOL: "true", t.DATE: "date '2020-01-02'", t.TIME: "time '10:00'",
    t.TIMESTAMP: "timestamp '2020-01-02 03:04:05'", t.TIMESTAMPTZ: "timestamptz '2020-01-02 03:04:05+00'",
    t.INTERVAL: "interval '1 day'", t.BYTEA: "'\\x01'::bytea", t.JSON: "'[1]'::json", t.JSONB: "'[1]'::jsonb",
    t.OID: "1::oid", t.REGCLASS: "'pg_class'::regclass", t.UUID: "'00000000-0000-0000-0000-000000000000'::uuid",
    signatures.ANYELEMENT: "1", signatures.ANYARRAY: "ARRAY[1]", t.ANY: "1", t.NAME: "'a'::name",
    t.ARRAY_OF[t.TEXT]: "ARRAY['a']",
}

#: strict functions whose calls have effects or wait; extract is grammar (EXTRACT(f FROM x)), and so
#: are current_time & co, whose precision PostgreSQL's grammar takes only as an integer constant
SKIP = {"extract", "pg_sleep", "pg_advisory_lock", "pg_advisory_xact_lock", "pg_try_advisory_lock", "pg_try_advisory_xact_lock",
        "pg_advisory_unlock", "set_config", "current_time", "current_timestamp", "localtime", "localtimestamp"}


def _type_sql(oid: int) -> str:
    if oid == signatures.ANYARRAY:
        return "int[]"
    if oid in (signatures.ANYELEMENT, t.ANY):
        return "int"
    return sqltypes.format_type(oid)


def _calls():
    assert "date_trunc" in proc_catalog.names()  # the whole catalog is loaded
    for name in sorted(functions.REGISTRY):
        fd = functions.REGISTRY[name]
        if not fd.strict or fd.sigs is None or name in SKIP:
            continue
        for sig in fd.sigs:
            args = sig.args if not sig.variadic else sig.args + sig.args[-1:]
            if any(a not in SAMPLES for a in args):
                continue
            for k in range(len(args)):
                vals = [f"NULL::{_type_sql(a)}" if i == k else SAMPLES[a] for i, a in enumerate(args)]
                yield f"SELECT {name}({', '.join(vals)})"


def test_strict_functions_return_null_on_null(ss_conn):
    calls = list(_calls())
    assert len(calls) > 150
    wrong = []
    for sql in calls:
        out = execute(ss_conn, sql)
        if out.failed or out.rows != [(None,)]:
            wrong.append(f"{sql}: {out.describe()}")
    assert not wrong, "\n".join(wrong)
