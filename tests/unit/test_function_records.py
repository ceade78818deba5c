"""A function's catalog record: version 2 keeps what CREATE FUNCTION says;
a version-1 record (the fields the model had before) still decodes, with
the new fields at their defaults, so no data directory becomes unreadable."""
from __future__ import annotations

import dataclasses

from splitstream.catalog.objects.model import Function
from splitstream.catalog.storage import records, wal_records

V1_FIELDS = ("oid", "schema", "name", "arg_types", "return_type", "body", "language", "owner")


def test_function_round_trips():
    fn = Function(16400, "public", "f", (23, 25), 23, "SELECT 1", arg_names=("a", ""), arg_defaults=("", "'x'"),
                  retset=True, volatility="i", strict=True, out_names=("c",), out_types=(23,),
                  acl=((0, 10, "X", ""), (10, 10, "X", "X")))
    assert records.loads(records.dumps(fn)) == fn
    assert records.record_type("function").version == 2
    op = wal_records.op_from_record(records.Record("op.drop_function_oid", {"oid": 16400}))
    assert op == ("drop_function_oid", 16400)


def test_version_1_function_record_decodes_with_defaults():
    fn = Function(16400, "public", "f", (23,), 23, "SELECT $1", "sql", 10)
    v1 = dataclasses.replace(records.record_type("function"), version=1, fields=V1_FIELDS,
                             head=records._record_head("function", 1, len(V1_FIELDS)),
                             names=tuple(map(records._str_bytes, V1_FIELDS)))
    parts: list = []
    records._put_object(parts, v1, fn)
    back = records.loads(b"".join(parts))
    assert back == fn and back.volatility == "v" and back.acl is None and back.arg_names == ()
