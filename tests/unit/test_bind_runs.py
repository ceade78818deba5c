"""protocol/bind_runs.py: which byte streams are read as one run of
Bind/[Describe]/Execute cycles, and that a run's columns decode to exactly
what the per-value binary decoder gives."""
from __future__ import annotations

import datetime as dt
import struct

import numpy as np
import pytest

from splitstream.protocol import bind_runs, messages
from splitstream.protocol import oids
from splitstream.protocol import types as wiretypes
from splitstream.server.session import ProtocolSession
from tests.support.engine import open_engine, postgres_session


def _msg(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def _bind(stmt: bytes, values: list[bytes | None], *, portal: bytes = b"", fmt: int = 1) -> bytes:
    body = portal + b"\0" + stmt + b"\0" + struct.pack("!hh", 1, fmt) + struct.pack("!h", len(values))
    for v in values:
        body += struct.pack("!i", -1) if v is None else struct.pack("!i", len(v)) + v
    return _msg(b"B", body + struct.pack("!h", 0))


DESCRIBE = _msg(b"D", b"P\0")
EXECUTE = _msg(b"E", b"\0" + struct.pack("!i", 1))
SYNC = _msg(b"S", b"")


def _read(data: bytes) -> list[messages.Message]:
    r = messages.FrontendReader()
    r.startup_phase = False
    r.bind_runs = True
    r.feed(data)
    out = []
    while (m := r.next_message()) is not None:
        out.append(m)
    return out


def _cycles(n: int, values, *, describe: bool = True, **kw) -> bytes:
    return b"".join(_bind(b"S_1", values(i), **kw) + (DESCRIBE if describe else b"") + EXECUTE for i in range(n))


def test_run_is_read_as_one_and_ends_at_sync():
    data = _cycles(100, lambda i: [struct.pack("!i", i), struct.pack("!d", i / 4)]) + SYNC
    msgs = _read(data)
    assert [m.kind for m in msgs] == [bind_runs.RUN_KIND, "S"]
    run = msgs[0].run
    assert (run.count, run.statement, run.described, run.max_rows) == (100, "S_1", True, 1)
    assert bind_runs.binary_values(run, 0, oids.INT4).tolist() == list(range(100))
    assert bind_runs.binary_values(run, 1, oids.FLOAT8).tolist() == [i / 4 for i in range(100)]
    # the run's messages are the ones a per-message reader gives
    plain = messages.FrontendReader()
    plain.startup_phase = False
    plain.feed(data)
    one_by_one = []
    while (m := plain.next_message()) is not None:
        one_by_one.append((m.kind, m.body))
    assert run.cycles() + [("S", b"")] == one_by_one


def test_layout_change_and_varying_lengths():
    """A NULL in cycle 50 ends the fixed-layout run there; the cycles from it
    on (NULLs and lengths varying) are read cycle by cycle as a second run;
    another statement ends a run."""
    vals = lambda i: [None if i % 50 == 0 and i else struct.pack("!i", i),  # noqa: E731
                      b"xxx" if i < 50 else b"x" * (i % 7)]
    msgs = _read(_cycles(120, vals, describe=False) + _bind(b"S_2", [b"1", b"2"]) + EXECUTE + SYNC)
    assert [m.kind for m in msgs] == [bind_runs.RUN_KIND, bind_runs.RUN_KIND, "B", "E", "S"]
    first, second = msgs[0].run, msgs[1].run
    assert (first.count, second.count) == (50, 70)
    ints = bind_runs.binary_values(second, 0, oids.INT4).tolist()
    assert ints == [0] + list(range(51, 100)) + [0] + list(range(101, 120))
    assert second.nulls(0).nonzero()[0].tolist() == [0, 50]
    assert second.values(1) == [b"x" * (i % 7) for i in range(50, 120)]
    assert first.values(1) == [b"xxx"] * 50 and first.nulls(0) is None


def test_not_runs():
    four = lambda i: [struct.pack("!i", i)]  # noqa: E731
    assert {m.kind for m in _read(_cycles(bind_runs.MIN_RUN - 1, four))} == {"B", "D", "E"}
    assert {m.kind for m in _read(_cycles(40, four, portal=b"p1"))} == {"B", "D", "E"}   # a named portal
    # text values of the same length still form a run (the server decodes them value by value)
    run = _read(_cycles(40, lambda i: [b"%03d" % i], fmt=0))[0]
    assert isinstance(run, messages.RunMessage) and run.run.formats == [0]
    # the per-message reader is unchanged while runs are off
    r = messages.FrontendReader()
    r.startup_phase = False
    r.feed(_cycles(40, four))
    assert r.next_message().kind == "B"


CASES = [
    (oids.INT2, [0, -1, 32767, -32768]),
    (oids.INT4, [0, -7, 2**31 - 1, -2**31]),
    (oids.INT8, [0, -7, 2**63 - 1, -2**63]),
    (oids.FLOAT4, [0.0, -1.5, 3.25, float("inf")]),
    (oids.FLOAT8, [0.0, -1.5, 1e300, float("-inf")]),
    (oids.BOOL, [True, False, True, True]),
    (oids.DATE, [dt.date(2000, 1, 1), dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1969, 7, 20)]),
    (oids.TIMESTAMP, [dt.datetime(2000, 1, 1), dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
                      dt.datetime(1970, 1, 1, 0, 0, 0, 1)]),
    (oids.TIMESTAMPTZ, [dt.datetime(2024, 2, 29, 12, 30, tzinfo=dt.timezone.utc),
                        dt.datetime(1900, 1, 1, tzinfo=dt.timezone.utc),
                        dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc),
                        dt.datetime(2038, 1, 19, 3, 14, 8, tzinfo=dt.timezone.utc)]),
]


@pytest.mark.parametrize("oid,values", CASES, ids=[str(c[0]) for c in CASES])
def test_columns_decode_as_values_do(oid, values):
    values = values * 4
    wire = [wiretypes.encode_binary(oid, v) for v in values]
    run = _read(_cycles(len(values), lambda i: [wire[i]]))[0].run
    col = bind_runs.binary_values(run, 0, oid)
    want = [wiretypes.decode_binary(oid, w) for w in wire]
    got = wiretypes.column_to_pylist(oid, col)
    assert got == want
    assert col.dtype == wiretypes.numpy_dtype(oid)


def test_infinities_and_other_types_go_value_by_value():
    inf = struct.pack("!q", 2**63 - 1)
    run = _read(_cycles(20, lambda i: [inf if i == 5 else struct.pack("!q", i)]))[0].run
    assert bind_runs.binary_values(run, 0, oids.TIMESTAMP) is None
    assert bind_runs.binary_values(run, 0, oids.INT8) is not None
    assert bind_runs.binary_values(run, 0, oids.NUMERIC) is None
    assert bind_runs.binary_values(run, 0, oids.INT4) is None      # 8 bytes are not an int4
    assert np.array_equal(bind_runs.binary_values(run, 0, oids.INT8)[:5], np.arange(5))


def test_session_takes_a_run_as_one_batch(tmp_path, monkeypatch):
    """In process: a run of 300 cycles (binary int4, text-format text,
    NULL throughout) is one call of the engine, answered as 300 cycles, and
    the table holds the rows; a run whose value fails goes cycle by cycle
    and fails at that Bind, as without runs."""
    with open_engine(str(tmp_path)) as eng:
        es = postgres_session(eng)
        es.execute_sql("CREATE TABLE t (k int, s text, z int8)")
        sess = ProtocolSession(es, es.info)
        calls = []
        real = es.execute_deferred_run
        monkeypatch.setattr(es, "execute_deferred_run", lambda *a: calls.append(a[2]) or real(*a))

        def run(data: bytes) -> bytes:
            sess.push(_read(data))
            out = b""
            while sess.has_work():
                out += sess.step()
            return out

        sql = b"INSERT INTO t (k, s, z) VALUES ($1, $2, $3)"
        run(_msg(b"P", b"S_1\0" + sql + b"\0" + struct.pack("!hiii", 3, oids.INT4, oids.TEXT, oids.INT8)) + SYNC)

        def cycle(i: int, s: bytes) -> bytes:
            body = b"\0S_1\0" + struct.pack("!hhhh", 3, 1, 0, 1) + struct.pack("!h", 3)
            body += struct.pack("!ii", 4, i) + struct.pack("!i", len(s)) + s + struct.pack("!i", -1) + struct.pack("!h", 0)
            return _msg(b"B", body) + DESCRIBE + EXECUTE

        out = run(b"".join(cycle(i, b"v%04d" % i) for i in range(300)) + SYNC)
        one = messages.bind_complete() + messages.no_data() + messages.command_complete("INSERT 0 1")
        assert out == one * 300 + messages.ready_for_query("I")
        assert calls == [300]
        res = es.execute_sql("SELECT count(*), sum(k), min(s), max(s), count(z) FROM t")
        assert [c.to_pylist()[0] for c in res.batch.cols] == [300, sum(range(300)), "v0000", "v0299", 0]
        # an invalid UTF-8 text value in cycle 7: the run goes cycle by cycle, the 8th Bind fails
        out = run(b"".join(cycle(i, b"\xff\xfe\xfd\xfc\xfb" if i == 7 else b"w%04d" % i) for i in range(20)) + SYNC)
        assert out.count(b"INSERT 0 1") == 7 and out.count(messages.bind_complete()) == 7 and b"C22021" in out
        assert calls == [300]
        res = es.execute_sql("SELECT count(*) FROM t")
        assert res.batch.cols[0].to_pylist() == [300]


def test_run_during_copy_in_is_the_bind_protocol_error(tmp_path):
    """A run arriving while COPY FROM STDIN waits for data fails the COPY
    as its first Bind would (PostgreSQL: unexpected message type 0x42)."""
    with open_engine(str(tmp_path)) as eng:
        es = postgres_session(eng)
        es.execute_sql("CREATE TABLE t (k int)")
        sess = ProtocolSession(es, es.info)
        sess.push(_read(_msg(b"Q", b"COPY t FROM STDIN\0")))
        out = sess.step()
        assert out.startswith(b"G")
        sess.push(_read(_cycles(20, lambda i: [struct.pack("!i", i)]) + SYNC))
        out = b""
        while sess.has_work():
            out += sess.step()
        assert b"C08P01" in out and b"unexpected message type 0x42 during COPY from stdin" in out
        assert not sess.terminated
        assert es.execute_sql("SELECT count(*) FROM t").batch.cols[0].to_pylist() == [0]
