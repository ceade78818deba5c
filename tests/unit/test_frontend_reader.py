"""FrontendReader fed the way the server's BufferedProtocol feeds it: each
socket read writes into the room ``get_buffer`` offers and reports its size
with ``buffer_updated``.  Messages must come out whole and in order however
the bytes are cut into reads, and whenever they are pulled."""
from __future__ import annotations

import struct

import pytest

from splitstream.protocol import messages
from splitstream.protocol.errors import PgError


def _msg(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def _reader() -> messages.FrontendReader:
    r = messages.FrontendReader()
    r.startup_phase = False
    return r


def _receive(r: messages.FrontendReader, data: bytes, limit: int) -> None:
    """One socket read of ``data`` (at most ``limit`` and the offered room)."""
    with r.get_buffer(-1) as room:
        n = min(len(room), len(data), limit)
        assert n > 0
        room[:n] = data[:n]
    r.buffer_updated(n)


def _pull(r: messages.FrontendReader) -> list[tuple[str, bytes]]:
    out = []
    while (m := r.next_message()) is not None:
        out.append((m.kind, bytes(m.body)))
    return out


def _copy_stream() -> tuple[bytes, list[tuple[str, bytes]]]:
    rows = b"".join(b"%d,%d,1970-01-01T00:00:00,%d\n" % (i % 7, i, i % 24) for i in range(3000))
    msgs = [(b"Q", b"COPY s FROM STDIN (FORMAT csv)\0"), (b"d", rows[:70000]), (b"d", rows[70000:]),
            (b"d", b"1,2,1970-01-01T00:00:00,3\n"), (b"c", b""), (b"S", b""), (b"Q", b"SELECT 1\0")]
    return b"".join(_msg(k, b) for k, b in msgs), [(k.decode(), b) for k, b in msgs]


def test_a_message_cut_at_every_byte_boundary() -> None:
    """Two reads, cut anywhere: CopyData headers and bodies split across them."""
    small = _msg(b"d", b"a,1\nb,2\n") + _msg(b"c", b"") + _msg(b"S", b"")
    for cut in range(1, len(small)):
        r = _reader()
        _receive(r, small[:cut], cut)
        first = _pull(r)
        _receive(r, small[cut:], len(small))
        assert first + _pull(r) == [("d", b"a,1\nb,2\n"), ("c", b""), ("S", b"")], cut


@pytest.mark.parametrize("read_size", [1, 3, 5, 4096, 16383, 16384, 65536, 1 << 20])
@pytest.mark.parametrize("pull_every", [1, 7, 0])
def test_copy_stream_in_reads_of_any_size(read_size: int, pull_every: int) -> None:
    """Reads of every size (a 70 kB CopyData spans many of them and makes
    the buffer grow), the messages pulled after every read, every 7th, or
    only at the end (unread bytes moved to the front or to a larger buffer)."""
    data, expected = _copy_stream()
    r = _reader()
    got: list[tuple[str, bytes]] = []
    pos = reads = 0
    while pos < len(data):
        before = r.buffered()
        _receive(r, data[pos:], read_size)
        pos += r.buffered() - before
        reads += 1
        if pull_every and reads % pull_every == 0:
            got += _pull(r)
    assert got + _pull(r) == expected
    assert r.buffered() == 0


def test_feed_matches_socket_reads() -> None:
    data, expected = _copy_stream()
    r = _reader()
    r.feed(data[:100])
    r.feed(data[100:])
    assert _pull(r) == expected
    assert messages.split_messages(data) == [messages.Message(k, b) for k, b in expected]


def test_discard_and_restore() -> None:
    """The connection takes a fresh read whole (a lean cycle) and puts it back if declined."""
    r = _reader()
    r.feed(_msg(b"S", b""))
    chunk = r.unread()
    r.discard()
    assert r.buffered() == 0 and r.next_message() is None
    r.restore(len(chunk))
    assert _pull(r) == [("S", b"")]


def test_huge_message_grows_the_buffer_and_is_let_go() -> None:
    body = bytes(range(256)) * 81920          # 20 MB
    data = _msg(b"d", body) + _msg(b"c", b"")
    r = _reader()
    pos = 0
    while pos < len(data):
        before = r.buffered()
        _receive(r, data[pos:], 100_000)
        pos += r.buffered() - before
    assert _pull(r) == [("d", body), ("c", b"")]
    with r.get_buffer(-1) as room:           # an empty reader does not keep megabytes of room
        assert len(room) <= messages.KEEP_ROOM


def test_length_limit_checked_at_the_header() -> None:
    r = _reader()
    r.max_message = 1000
    _receive(r, b"d" + struct.pack("!i", 2000), 5)
    with pytest.raises(PgError) as e:
        r.next_message()
    assert e.value.sqlstate == "54000"
