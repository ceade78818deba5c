"""boolean casts as pg_cast has them: to and from int4 and the string types,
not int2, int8, float4, float8 or numeric (42846 at the cast as written,
also for a NULL and over no rows), compared with PostgreSQL 15: values and
errors (SQLSTATE, message, and the position: at the ``::`` or ``CAST``)."""
from __future__ import annotations

import itertools

from tests.support.fidelity import simple_outcome

OTHERS = ["int2", "int4", "int8", "float4", "float8", "numeric", "text", "varchar"]
VALUES = {"bool": ["true", "false", "null"], "int2": ["0", "7", "null"], "int4": ["0", "-3", "null"],
          "int8": ["0", "12", "null"], "float4": ["0", "1.5", "null"], "float8": ["0", "2.5", "null"],
          "numeric": ["0", "1.25", "null"], "text": ["'yes'", "'off'", "null"], "varchar": ["'t'", "'0'", "null"]}


def _cases():
    for other in OTHERS:
        for src, dst in (("bool", other), (other, "bool")):
            for v in VALUES[src]:
                yield f"SELECT {v}::{src}::{dst}"
            yield f"SELECT x::{dst} FROM (SELECT {VALUES[src][0]}::{src} AS x WHERE false) s"     # no rows
            yield f"SELECT CAST(x AS {dst}) FROM (VALUES ({VALUES[src][1]}::{src})) v(x)"


def test_bool_casts_agree_with_postgresql(ss_conn, pg_conn):
    cases = list(_cases())
    assert len(cases) > 60
    diffs = [(sql, got, want) for sql in cases
             if (got := simple_outcome(ss_conn, sql)) != (want := simple_outcome(pg_conn, sql))]
    assert not diffs, diffs[:5]
    assert any(o[0] == "42846" for o in map(lambda s: simple_outcome(pg_conn, s), itertools.islice(cases, 0, 8)))
