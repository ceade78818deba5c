"""The ordered parse of a COPY's plain pieces (``commands/copy_parse``):
pieces cut anywhere between lines are appended, in order, to column
batches of a bounded size; a piece the compiled reader declines keeps its
place as bytes; NULL masks line up across appends; nothing survives close."""
from __future__ import annotations

import time

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
    assert all(isinstance(b, bytes) or b.n <= b.batch.cap for b in got)


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
    assert [b.batch.cap for b in p.finish()] == [p.max_rows]      # nothing known: room for the most
    assert copy_parse._rows_seen[-1] == 100
    p = _parse()
    p.add([_lines(0, 100)])
    assert [b.batch.cap for b in p.finish()] == [p.min_rows]
    copy_parse._rows_seen[-1] = 1_000_000
    p = _parse()
    p.add([_lines(0, 30_000, null_every=10)])
    (batch,) = p.finish()
    assert batch.batch.cap == 1_250_000 and batch.n == 30_000


def test_rows_taken_while_the_parse_goes_on_are_not_given_twice():
    """At CopyDone the rows parsed so far are taken (staged) while the rest is
    parsed into the same batch: every row once, in order."""
    p = _parse()
    p.add([_lines(0, 3000, null_every=11)])
    first = p.finish()          # waits for the parse; the batch is still the current one
    p2 = _parse()
    taken = []
    for k in range(60):
        p2.add([_lines(k * 400, 400)])
        time.sleep(0.0002 * (k % 3))
        taken += p2.take_parsed(1)          # races the decode thread appending
    rest = p2.last([_lines(24000, 100)])
    ks, _ = _flatten(taken + rest)
    assert ks == list(range(24100))
    assert len(taken) > 1
    assert _flatten(first)[0] == [None if i % 11 == 0 else i for i in range(3000)]
    assert p2.take_parsed(1) == []


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


def test_regions_parse_large_pieces_in_place_and_join_the_rest():
    """Whole lines inside a large piece are handed over where they lie; small
    pieces, straddling lines and a line longer than a piece are joined; the
    regions are the input, in order, each of whole lines."""
    big = copy_parse.IN_PLACE_BYTES
    data = _lines(0, 40000) + b"7," + b"1" * (3 * big) + b"\n" + _lines(40000, 5000)
    cuts = [0, 100, big // 2, big // 2 + 7, 3 * big + 11, 3 * big + 12, 5 * big, 9 * big + 3, 10 * big + 5,
            12 * big, len(data)]        # small, large, a 1-byte piece, the long line across pieces
    pieces = [memoryview(data)[a:b] if k % 2 else data[a:b] for k, (a, b) in enumerate(zip(cuts, cuts[1:]))]
    scratch = csv_kernels.scratch()
    out, in_place = [], 0
    for region in copy_parse._regions(pieces, scratch):
        chunk = bytes(region)
        assert chunk.endswith(b"\n")
        out.append(chunk)
        in_place += isinstance(region, memoryview) and region.obj is data
    assert b"".join(out) == data
    assert in_place >= 2


@pytest.mark.parametrize("last", [False, True])
def test_newline_search_in_bytes_and_views(last):
    for text in (b"", b"abc", b"a\nb\nc", b"\n", b"xy\n"):
        want = text.rfind(b"\n") if last else text.find(b"\n")
        assert copy_parse._newline(text, last) == want
        padded = b"#" + text + b"#"
        assert copy_parse._newline(memoryview(padded)[1:-1], last) == want
