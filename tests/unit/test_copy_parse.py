"""The ordered parse of a COPY's plain pieces (``commands/copy_parse``):
pieces cut anywhere between lines are appended, in order, to column
batches of a bounded size; a piece the compiled reader declines keeps its
place as bytes; NULL masks line up across appends; nothing survives close."""
from __future__ import annotations

import collections
import threading

import pytest

from splitstream.executor.backends.llvm import csv as csv_kernels
from splitstream.executor.commands import copy_parse
from splitstream.protocol import copy as copyformat
from splitstream.protocol.oids import INT4, INT8

CSV = copyformat.parse_copy_options({"format": "csv"}, is_from=True)
TEXT = copyformat.parse_copy_options({"format": "text"}, is_from=True)


def _parse(opts=CSV, cap_bytes: int = 1 << 20, monkeypatch=None) -> copy_parse.PlainParse:
    csv_kernels.warm(opts, [INT4, INT8], wait=True)
    if monkeypatch is not None:
        monkeypatch.setattr(copy_parse, "BATCH_BYTES", cap_bytes)
    return copy_parse.PlainParse(lambda rows: csv_kernels.appender([INT4, INT8], opts, rows, True),
                                 csv_kernels.shortest_row([INT4, INT8]), key=-1)


def _flatten(parsed) -> tuple[list, list]:
    """(k values with None for NULL, kinds in order: 'cols' or 'raw')."""
    ks, kinds = [], []
    for p in parsed:
        if isinstance(p, bytes):
            kinds.append("raw")
            ks.extend(("raw", ln) for ln in p.decode().splitlines())
            continue
        kinds.append("cols")
        (k, km), _ = p.columns()
        ks.extend(None if km is not None and km[i] else int(k[i]) for i in range(len(k)))
    return ks, kinds


def _lines(first: int, n: int, null_every: int = 0) -> bytes:
    return b"".join(b",%d\n" % (i * 3) if null_every and i % null_every == 0 else b"%d,%d\n" % (i, i * 3)
                    for i in range(first, first + n))


def test_pieces_cut_anywhere_append_in_order_and_split_into_bounded_batches(monkeypatch):
    data = _lines(0, 30000)
    p = _parse(cap_bytes=64 << 10, monkeypatch=monkeypatch)    # 16,000 rows of the shortest spelling per batch
    pos = 0
    for step in (777, 5, 100_000, 3, 40, 200_000):
        end = data.rfind(b"\n", 0, pos + step) + 1 if pos + step < len(data) else len(data)
        if end <= pos:
            continue
        p.add([memoryview(data)[pos:end - 1], data[end - 1:end]])
        pos = end
    got = p.last([data[pos:]] if pos < len(data) else [b""])
    ks, kinds = _flatten(got)
    assert ks == list(range(30000))
    assert len(kinds) >= 2 and set(kinds) == {"cols"}
    assert all(isinstance(b, bytes) or b.rows <= b.cap for b in got)


def test_a_declined_piece_keeps_its_place_and_nulls_line_up():
    p = _parse()
    p.add([_lines(0, 1000, null_every=7)])
    p.add([b"1.5,2\n" + _lines(1000, 10)])          # not an integer: the general path's
    p.add([_lines(2000, 500, null_every=3)])
    ks, kinds = _flatten(p.finish())
    assert kinds == ["cols", "raw", "cols"]
    want = [None if i % 7 == 0 else i for i in range(1000)] + [("raw", "1.5,2")] \
        + [("raw", f"{i},{i * 3}") for i in range(1000, 1010)] + [None if i % 3 == 0 else i for i in range(2000, 2500)]
    assert ks == want


def test_text_format_empty_field_is_declined_not_null():
    p = _parse(TEXT)
    p.add([b"1\t2\n3\t4\n"])
    p.add([b"\t5\n6\t7\n"])        # an empty string is no integer: PostgreSQL's error, from the general path
    ks, kinds = _flatten(p.finish())
    assert kinds == ["cols", "raw"] and ks[:2] == [1, 3]


def test_the_first_batch_is_sized_like_the_last_copy_into_the_relation():
    p = _parse()
    copy_parse._rows_seen.pop(-1, None)
    p.add([_lines(0, 100)])
    assert [b.cap for b in p.finish()] == [p.max_rows]      # nothing known: room for the most
    assert copy_parse._rows_seen[-1] == 100
    p = _parse()
    p.add([_lines(0, 100)])
    assert [b.cap for b in p.finish()] == [p.min_rows]
    copy_parse._rows_seen[-1] = 1_000_000
    p = _parse()
    p.add([_lines(0, 30_000, null_every=10)])
    (batch,) = p.finish()
    assert batch.cap == 1_250_000 and batch.rows == 30_000


def test_close_drops_what_is_queued():
    p = _parse()
    for i in range(20):
        p.add([_lines(i * 1000, 1000)])
    p.close()
    assert p.finish() == [] and p.take_ready() == []


def test_gathered_columns_never_point_into_the_scratch_buffer():
    p = _parse()
    p.add([_lines(0, 5000)])
    first = p.finish()
    p.add([_lines(5000, 5000)])           # the same decode thread's scratch, overwritten
    second = p.finish()
    assert _flatten(first)[0] == list(range(5000)) and _flatten(second)[0] == list(range(5000, 10000))


def test_a_failing_parse_fails_the_copy_rather_than_hanging_it(monkeypatch):
    p = _parse()

    def broken(*_a, **_kw):
        raise MemoryError("no room to join the pieces")

    monkeypatch.setattr(csv_kernels, "gather", broken)
    p.add([_lines(0, 50), _lines(50, 50)])         # two pieces: joined (one is parsed where it lies)
    with pytest.raises(MemoryError):
        p.finish()
    with pytest.raises(MemoryError):
        p.add([_lines(100, 100)])


def _held_decode(monkeypatch) -> threading.Event:
    """The decode thread starts only once the returned event is set: the
    COPY's last piece then comes while the thread is busy (``last`` splits)."""
    gate = threading.Event()
    start = csv_kernels.run_ahead

    def held(fn, *args):
        return start(lambda: (gate.wait(10), fn(*args))[1])

    monkeypatch.setattr(csv_kernels, "run_ahead", held)
    return gate


def _last_while_busy(p: copy_parse.PlainParse, gate: threading.Event, last: bytes) -> list:
    threading.Timer(0.2, gate.set).start()
    return p.last([last])


@pytest.mark.parametrize("nulls", ["none", "tail only", "both"])
def test_the_last_piece_and_the_newest_queued_are_parsed_here_while_the_decode_thread_is_busy(monkeypatch, nulls):
    """``last`` takes the newest queued pieces (half of what is left) and
    parses them with the last one on its own thread; their rows join the
    decode thread's batch after its rows: one batch, every row once, in
    order, NULL masks lined up (NULLs on either side or none)."""
    p = _parse()
    gate = _held_decode(monkeypatch)
    head_nulls = 5 if nulls == "both" else 0
    tail_nulls = 0 if nulls == "none" else 4
    parsed_back = []
    for i in range(6):
        p.add([_lines(i * 1000, 1000, null_every=head_nulls if i < 4 else tail_nulls)],
              lambda i=i: parsed_back.append((i, threading.current_thread() is threading.main_thread())))
    assert len(p.queue) == 6
    got = _last_while_busy(p, gate, _lines(6000, 700, null_every=tail_nulls))
    ks, kinds = _flatten(got)

    def want(i: int, every: int):
        return None if every and i % every == 0 else i
    assert ks == [want(i, head_nulls) for i in range(4000)] + [want(i, tail_nulls) for i in range(4000, 6700)]
    assert kinds == ["cols"]
    assert sorted(i for i, _ in parsed_back) == list(range(6))       # every slab given back once parsed
    assert [i for i, here in parsed_back if here] == [4, 5]     # the newest queued, to half what was left
    assert p.queue == collections.deque() and p.queued == 0


def test_a_split_parse_keeps_order_when_the_rows_do_not_fit_one_batch(monkeypatch):
    """The decode thread's batch has no room for the rows parsed apart:
    they follow it as batches of their own, each within its room."""
    p = _parse(cap_bytes=32 << 10, monkeypatch=monkeypatch)       # 8,000 rows of the shortest spelling
    gate = _held_decode(monkeypatch)
    for i in range(6):
        p.add([_lines(i * 2500, 2500)])
    got = _last_while_busy(p, gate, _lines(15000, 2500))
    ks, kinds = _flatten(got)
    assert ks == list(range(17500)) and len(kinds) >= 3 and set(kinds) == {"cols"}
    assert all(b.rows <= b.cap for b in got)


def test_a_split_parse_keeps_a_declined_piece_in_its_place(monkeypatch):
    """A line the kernel declines in a piece parsed apart stays where it
    was, as bytes for the general path, between the rows around it."""
    p = _parse()
    gate = _held_decode(monkeypatch)
    for i in range(4):
        p.add([_lines(i * 1000, 1000)])
    p.add([_lines(4000, 500) + b"1.5,2\n" + _lines(4500, 500)])
    got = _last_while_busy(p, gate, _lines(5000, 100))
    ks, kinds = _flatten(got)
    declined = [("raw", f"{i},{i * 3}") for i in range(4000, 4500)] + [("raw", "1.5,2")] \
        + [("raw", f"{i},{i * 3}") for i in range(4500, 5000)]
    assert ks == list(range(4000)) + declined + list(range(5000, 5100))
    assert kinds == ["cols", "raw", "cols"]


def test_a_failure_on_the_decode_thread_fails_a_split_parse(monkeypatch):
    p = _parse()
    gate = _held_decode(monkeypatch)
    real = copy_parse.PlainParse._run
    calls = []

    def failing_on_the_decode_thread(self, pieces, cur, done, scratch, rows):
        calls.append(threading.current_thread() is threading.main_thread())
        if not calls[-1]:
            raise MemoryError("no room")
        return real(self, pieces, cur, done, scratch, rows)

    monkeypatch.setattr(copy_parse.PlainParse, "_run", failing_on_the_decode_thread)
    for i in range(4):
        p.add([_lines(i * 1000, 1000)])
    with pytest.raises(MemoryError):
        _last_while_busy(p, gate, _lines(4000, 100))
    assert True in calls and False in calls        # both threads parsed
