"""protocol/cycles.py: one Bind/[Describe]/Execute/Sync cycle cut from a read
chunk into its shape and raw values (issue 19's lean path), and the
session's use of it (server/session.py ``lean_raw``) against a real engine."""
from __future__ import annotations

import struct
import threading

from splitstream.executor.api import LeanOutcome
from splitstream.protocol import messages
from splitstream.protocol.cycles import split_cycle
from splitstream.server.session import ProtocolSession
from tests.support.engine import open_engine, postgres_session, result_rows


def _msg(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def _cycle(values: list[bytes | None], stmt: bytes = b"s1", describe: bytes | None = b"P",
           fmts: tuple[int, ...] = ()) -> bytes:
    body = b"\0" + stmt + b"\0" + struct.pack("!h", len(fmts)) + b"".join(struct.pack("!h", f) for f in fmts)
    body += struct.pack("!h", len(values))
    for v in values:
        body += struct.pack("!i", -1) if v is None else struct.pack("!i", len(v)) + v
    body += struct.pack("!h", 0)
    out = _msg(b"B", body)
    if describe is not None:
        out += _msg(b"D", describe + b"\0")
    return out + _msg(b"E", b"\0\0\0\0\0") + _msg(b"S", b"")


def test_split_cycle_separates_shape_from_values():
    shape, values = split_cycle(_cycle([b"1", None, b"abc"]))
    assert values == [b"1", None, b"abc"]
    shape2, values2 = split_cycle(_cycle([b"12345", b"7", b""]))
    assert shape2 == shape and values2 == [b"12345", b"7", b""]
    assert split_cycle(_cycle([b"1", None, b"abc"], stmt=b"s2"))[0] != shape
    assert split_cycle(_cycle([b"1", None, b"abc"], describe=None))[0] != shape
    assert split_cycle(_cycle([b"1", None, b"abc"], fmts=(1,)))[0] != shape
    assert split_cycle(_cycle([b"1", None]))[0] != shape          # the count is part of the shape


def test_split_cycle_refuses_anything_but_exactly_one_cycle():
    one = _cycle([b"1"])
    assert split_cycle(one + one) is None                       # two cycles: the ordinary reader
    assert split_cycle(one[:-1]) is None                        # partial
    assert split_cycle(_msg(b"Q", b"select 1\0")) is None
    assert split_cycle(_cycle([b"1"]).replace(b"E\0\0\0\x09", b"H\0\0\0\x09")) is None
    broken = bytearray(one)
    broken[1:5] = struct.pack("!i", 4000)                       # a Bind longer than the chunk
    assert split_cycle(bytes(broken)) is None
    lying = bytearray(one)
    at = one.index(b"\0\0\0\x01" + b"1")                        # the value's length says 200
    lying[at:at + 4] = struct.pack("!i", 200)
    assert split_cycle(bytes(lying)) is None
    assert messages.split_messages(one + one)[4].kind == "B"


def _run(sess: ProtocolSession, chunk: bytes) -> tuple[bool, bytes]:
    """Serve one chunk as the connection does: raw first, else the queue
    (remembering the shape); returns (taken raw, the answer)."""
    answered = threading.Event()
    box: list[LeanOutcome] = []

    def done(o: LeanOutcome) -> None:
        box.append(o)
        answered.set()
    cycle = split_cycle(chunk)
    assert cycle is not None
    if sess.lean_raw(chunk, cycle, done):
        assert answered.wait(30)
        return True, sess.lean_finish(box[0])
    sess.pending_shape = cycle[0]
    sess.push(messages.split_messages(chunk))
    if sess.lean_cycle(done):
        assert answered.wait(30)
        return False, sess.lean_finish(box[0])
    sess.pending_shape = None
    return False, sess.step()


def test_a_known_shape_is_served_raw_with_the_same_answer_and_errors_stay_its_own(tmp_path):
    with open_engine(str(tmp_path / "d"), fsync=True) as eng:
        es0 = postgres_session(eng)
        es0.execute_sql("CREATE FOREIGN TABLE s (a int, b text) SERVER stream")
        es0.execute_sql("CREATE VIEW v AS SELECT count(*), sum(a) FROM s")
        es = postgres_session(eng, pid=2)
        sess = ProtocolSession(es, es.info)
        sess.push([messages.Message("P", b"s1\0INSERT INTO s VALUES ($1, $2)\0\0\0"), messages.Message("S", b"")])
        assert sess.step().endswith(messages.ready_for_query("I"))
        first = _run(sess, _cycle([b"1", b"x"]))
        assert first == (False, b"2\0\0\0\x04n\0\0\0\x04C\0\0\0\x0fINSERT 0 1\0Z\0\0\0\x05I")
        assert _run(sess, _cycle([b"2", None])) == (True, first[1])      # the same shape: raw, same answer
        taken, out = _run(sess, _cycle([b"zz", b"y"]))                   # a bad value: the ordinary path's error
        assert not taken and b"22P02" in out and b'invalid input syntax for type integer: "zz"' in out
        assert _run(sess, _cycle([b"3", b"z"]))[0]
        assert result_rows(es0, "SELECT * FROM v") == [(3, 6)]
        # a statement parsed again under the same name is a new statement: the shape
        # the old one was served under is not taken raw (here: its parameter count is wrong)
        sess.push([messages.Message("C", b"Ss1\0"), messages.Message("P", b"s1\0INSERT INTO s (a) VALUES ($1)\0\0\0"),
                   messages.Message("S", b"")])
        sess.step()
        taken, out = _run(sess, _cycle([b"4", b"z"]))
        assert not taken and b'bind message supplies 2 parameters, but prepared statement "s1" requires 1' in out
        assert _run(sess, _cycle([b"10"]))[0] is False
        assert _run(sess, _cycle([b"20"]))[0] is True
        assert result_rows(es0, "SELECT * FROM v") == [(5, 36)]


def test_a_raw_cycle_retried_is_put_back_as_its_messages(tmp_path):
    with open_engine(str(tmp_path / "d"), fsync=True) as eng:
        es0 = postgres_session(eng)
        es0.execute_sql("CREATE FOREIGN TABLE s (a int) SERVER stream")
        es = postgres_session(eng, pid=2)
        sess = ProtocolSession(es, es.info)
        sess.push([messages.Message("P", b"s1\0INSERT INTO s VALUES ($1)\0\0\0"), messages.Message("S", b"")])
        sess.step()
        _run(sess, _cycle([b"1"], describe=None))
        chunk = _cycle([b"2"], describe=None)
        got = threading.Event()
        assert sess.lean_raw(chunk, split_cycle(chunk), lambda o: got.set())
        assert got.wait(30)
        assert sess.lean_finish(LeanOutcome(retry=True)) == b""
        assert sess.has_work() and "".join(m.kind for m in sess._queue) == "BES"
        assert sess.step().endswith(b"C\0\0\0\x0fINSERT 0 1\0Z\0\0\0\x05I")
