"""Pipelined COPY decoding: plain data is parsed in order as it arrives
(``copy_parse``), buffered data in slabs (``CopySink._hand_over``), on
decode threads while the next pieces arrive, and staged in order.  The COPY stays one statement: a bad row in a later slab fails all
of it with PostgreSQL's error and line, a slab the reader declines (quotes)
is decoded in order by the general path, a header is still skipped once, and
the views see the same rows on the vector and LLVM backends."""
from __future__ import annotations

import pytest

from splitstream.executor.backends.llvm import csv as compiled_csv
from splitstream.executor.commands import copy as copy_cmd
from splitstream.executor.commands import copy_parse
from splitstream.protocol import copy as copyformat
from splitstream.protocol import oids
from splitstream.protocol.errors import PgError
from tests.support.engine import open_engine, plain_session, result_rows

SLAB = 16 << 10          # small slabs: a COPY of a few hundred kB is many of them


@pytest.fixture
def pipelined(monkeypatch):
    """Small slabs and parse steps, the compiled reader built, and a count of
    the slabs and pieces handed to the decode threads."""
    monkeypatch.setattr(copy_cmd, "AHEAD_SLAB", SLAB)
    monkeypatch.setattr(copy_cmd, "PARSE_STEP", SLAB)
    for header in (False, True):
        opts = copyformat.parse_copy_options({"format": "csv", "header": header}, is_from=True)
        compiled_csv.warm(opts, [oids.INT4, oids.INT4], wait=True)
    handed: list[int] = []
    real = compiled_csv.decode_ahead

    def counting(data, *a, **kw):
        handed.append(len(data))
        return real(data, *a, **kw)

    monkeypatch.setattr(compiled_csv, "decode_ahead", counting)
    real_add = copy_parse.PlainParse.add

    def adding(self, pieces, parsed=None):
        handed.append(sum(map(len, pieces)))
        return real_add(self, pieces, parsed)

    monkeypatch.setattr(copy_parse.PlainParse, "add", adding)
    return handed


def _setup(s, backend: str = "llvm") -> None:
    s.execute_sql(f"SET executor_backend = '{backend}'")
    s.execute_sql("CREATE FOREIGN TABLE ps (k int, x int) SERVER stream")
    s.execute_sql("CREATE VIEW pv AS SELECT k, count(*) AS n, sum(x) AS sx, min(x) AS mn FROM ps GROUP BY k")


def _copy(s, data: bytes, piece: int, options: str = "(FORMAT csv)", fail_at: int | None = None) -> str:
    """COPY ``data`` fed in ``piece``-byte CopyData payloads (cut anywhere in a
    line); ``fail_at``: abort (CopyFail) after that many bytes."""
    sink = s.execute_sql(f"COPY ps FROM STDIN {options}").copy_in
    for i in range(0, len(data), piece):
        if fail_at is not None and i >= fail_at:
            sink.abort("client gave up")
            return "aborted"
        sink.feed(data[i:i + piece])
    return sink.finish()


def _rows(n: int, first: int = 0) -> list[tuple[int, int]]:
    return [(i % 97, (i * 7919) % 100003 - 50000) for i in range(first, first + n)]


def _csv(rows) -> bytes:
    return "".join(f"{k},{x}\n" for k, x in rows).encode()


def _want(rows) -> list[tuple]:
    out: dict[int, list] = {}
    for k, x in rows:
        g = out.setdefault(k, [0, 0, x])
        g[0] += 1
        g[1] += x
        g[2] = min(g[2], x)
    return [(k, *out[k]) for k in sorted(out)]


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_pipelined_copy_gives_every_row_once_in_order(tmp_path, pipelined, backend):
    rows = _rows(40000)
    with open_engine(str(tmp_path / "d")) as eng:
        s = plain_session(eng)
        _setup(s, backend)
        assert _copy(s, _csv(rows), 5000) == "COPY 40000"      # payloads cut mid-line
        assert len(pipelined) >= 5, pipelined
        assert result_rows(s, "SELECT * FROM pv ORDER BY k") == _want(rows)


def test_a_bad_row_in_a_later_slab_fails_the_whole_copy(tmp_path, pipelined):
    good = _rows(30000)
    with open_engine(str(tmp_path / "d")) as eng:
        s = plain_session(eng)
        _setup(s)
        assert _copy(s, _csv(good[:100]), 1000) == "COPY 100"
        before = result_rows(s, "SELECT * FROM pv ORDER BY k")
        bad = _csv(good) + b"1,zz\n" + _csv(_rows(5000, 30000))
        with pytest.raises(PgError) as err:
            _copy(s, bad, 7000)
        assert len(pipelined) >= 5
        e = err.value
        assert e.sqlstate == "22P02" and e.message == 'invalid input syntax for type integer: "zz"'
        assert e.context == 'COPY ps, line 30001, column x: "zz"'
        assert result_rows(s, "SELECT * FROM pv ORDER BY k") == before
        assert _copy(s, _csv(good[100:200]), 1000) == "COPY 100"    # the session goes on
        assert result_rows(s, "SELECT * FROM pv ORDER BY k") == _want(good[:200])


def test_quoted_fields_across_payloads_and_a_quoted_newline_error(tmp_path, pipelined, monkeypatch):
    """Quotes make the compiled reader decline a slab: the general path decodes
    it in order; a payload boundary inside a quoted field never splits a row;
    a newline inside a quoted number is PostgreSQL's error at its line."""
    rows = _rows(20000)
    lines = [f"{k},{x}\n" for k, x in rows]
    for i in range(0, len(lines), 1500):
        k, x = rows[i]
        lines[i] = f'"{k}","{x}"\n'
    data = "".join(lines).encode()
    with open_engine(str(tmp_path / "d")) as eng:
        s = plain_session(eng)
        _setup(s)
        assert _copy(s, data, 4099) == "COPY 20000"
        assert result_rows(s, "SELECT * FROM pv ORDER BY k") == _want(rows)
        lines[15000] = '7,"12\n34"\n'
        errors = []
        for slab in (SLAB, copy_cmd.DECODE_SLAB << 4):          # pipelined, then in one piece
            monkeypatch.setattr(copy_cmd, "AHEAD_SLAB", slab)
            with pytest.raises(PgError) as err:
                _copy(s, "".join(lines).encode(), 4099)
            errors.append((err.value.sqlstate, err.value.message, err.value.context))
        # PostgreSQL counts the quoted newline: the row ends on line 15002
        assert errors[0] == errors[1] == ("22P02", 'invalid input syntax for type integer: "12\n34"',
                                          'COPY ps, line 15002, column x: "12\n34"')
        assert result_rows(s, "SELECT * FROM pv ORDER BY k") == _want(rows)


def test_header_is_skipped_once_then_slabs_are_pipelined(tmp_path, pipelined, monkeypatch):
    monkeypatch.setattr(copy_cmd, "DECODE_SLAB", 64 << 10)     # the header's slab is decoded in place
    rows = _rows(30000)
    with open_engine(str(tmp_path / "d")) as eng:
        s = plain_session(eng)
        _setup(s)
        assert _copy(s, b"k,x\n" + _csv(rows), 3000, "(FORMAT csv, HEADER)") == "COPY 30000"
        assert len(pipelined) >= 3
        assert result_rows(s, "SELECT * FROM pv ORDER BY k") == _want(rows)


def test_copy_fail_with_slabs_in_flight_delivers_nothing(tmp_path, pipelined):
    rows = _rows(30000)
    with open_engine(str(tmp_path / "d")) as eng:
        s = plain_session(eng)
        _setup(s)
        assert _copy(s, _csv(rows), 6000, fail_at=200_000) == "aborted"
        assert pipelined
        assert result_rows(s, "SELECT count(*) FROM pv") == [(0,)]
        assert _copy(s, _csv(rows), 6000) == "COPY 30000"
        assert result_rows(s, "SELECT * FROM pv ORDER BY k") == _want(rows)


@pytest.mark.parametrize("ending", [b"5,6", b'5,"6\n7,8'])
def test_the_last_slab_without_a_newline_is_parsed_ahead_too(tmp_path, pipelined, monkeypatch, ending):
    """At CopyDone what is buffered is the last slab, a newline added; an
    unterminated quote there is the same error as without pipelining."""
    data = _csv(_rows(20000)) + ending
    outcomes = []
    for slab in (SLAB, copy_cmd.DECODE_SLAB << 4):
        monkeypatch.setattr(copy_cmd, "AHEAD_SLAB", slab)
        with open_engine(str(tmp_path / f"d{slab}")) as eng:
            s = plain_session(eng)
            _setup(s)
            try:
                outcomes.append(_copy(s, data, 3000))
            except PgError as e:
                outcomes.append((e.sqlstate, e.message, e.context))
            outcomes.append(result_rows(s, "SELECT * FROM pv ORDER BY k"))
    assert outcomes[:2] == outcomes[2:]
    if ending == b"5,6":
        assert outcomes[0] == "COPY 20001" and outcomes[1] == _want(_rows(20000) + [(5, 6)])
    else:
        assert outcomes[0][0] == "22P04" and outcomes[1] == []


@pytest.mark.parametrize("later", ["quotes", "end marker"])
def test_plain_payloads_then_quotes_or_an_end_marker(tmp_path, pipelined, later):
    """Plain payloads are kept as received and handed over as a slab's pieces
    (gathered on the decode thread); a quote or a backslash later in the COPY
    sends it the buffered way from there, after the pieces kept so far, with
    every row once and in order, and nothing after an end-of-data marker."""
    first, second = _rows(20000), _rows(10000, 20000)
    tail = [f'"{k}",{x}\n' if i % 7 == 0 else f"{k},{x}\n" for i, (k, x) in enumerate(second)] \
        if later == "quotes" else ["\\.\n"] + [f"{k},{x}\n" for k, x in second]
    data = _csv(first) + "".join(tail).encode()
    with open_engine(str(tmp_path / "d")) as eng:
        s = plain_session(eng)
        _setup(s)
        want = first + second if later == "quotes" else first
        assert _copy(s, data, 3001) == f"COPY {len(want)}"
        assert len(pipelined) >= 5, pipelined
        assert result_rows(s, "SELECT * FROM pv ORDER BY k") == _want(want)


def test_gather_joins_bytes_and_memoryviews():
    pieces = [b"1,2\n3,", memoryview(b"4\n5,6\nxx")[:6], b"7,8\n"]
    assert bytes(compiled_csv.gather(pieces)) == b"1,2\n3,4\n5,6\n7,8\n"
    one = b"1,2\n"
    assert compiled_csv.gather([one]) is one


def test_payloads_fed_on_the_event_loop_keep_their_order_with_the_rest(tmp_path, pipelined):
    """``feed_light`` (the server's event-loop thread) takes plain payloads and
    only hands them on; it declines a payload with a quote or a backslash,
    a pending header, or a parse too far behind, feeding nothing, and the
    ordinary feed then goes on from there: every row once, in order."""
    rows = _rows(30000)
    lines = [f"{k},{x}\n" for k, x in rows]
    lines[20000] = f'"{rows[20000][0]}",{rows[20000][1]}\n'          # a quote: the buffered way from there
    data = "".join(lines).encode()
    with open_engine(str(tmp_path / "d")) as eng:
        s = plain_session(eng)
        _setup(s)
        sink = s.execute_sql("COPY ps FROM STDIN (FORMAT csv)").copy_in
        light = declined = 0
        for i in range(0, len(data), 4099):
            payload = data[i:i + 4099]
            if sink.feed_light([payload]):
                light += 1
            else:
                declined += 1
                sink.feed(payload)
        assert sink.finish() == "COPY 30000"
        assert light > 10 and declined >= 1
        assert result_rows(s, "SELECT * FROM pv ORDER BY k") == _want(rows)
        header = s.execute_sql("COPY ps FROM STDIN (FORMAT csv, HEADER)").copy_in
        assert not header.feed_light([b"k,x\n1,2\n"])          # the header is skipped by the ordinary feed
        header.feed(b"k,x\n1,2\n")
        assert header.feed_light([b"3,4\n"]) and header.finish() == "COPY 2"


@pytest.mark.parametrize("cut", [3, 4, 5, 3001])
def test_a_plain_header_line_is_skipped_and_the_rest_parsed_in_order(tmp_path, pipelined, cut):
    """HEADER with plain data: the first line is skipped and the rows take
    the ordered parse (handed over in pieces), wherever the first payload
    ends; a header cut before its newline goes the buffered way; a bad row
    is numbered counting the header, as PostgreSQL does."""
    rows = _rows(20000)
    data = b"k,x\n" + _csv(rows)
    with open_engine(str(tmp_path / "d")) as eng:
        s = plain_session(eng)
        _setup(s)
        sink = s.execute_sql("COPY ps FROM STDIN (FORMAT csv, HEADER)").copy_in
        sink.feed(data[:cut])
        for i in range(cut, len(data), 3000):
            sink.feed(data[i:i + 3000])
        assert sink.finish() == "COPY 20000"
        assert result_rows(s, "SELECT * FROM pv ORDER BY k") == _want(rows)
        assert (len(pipelined) >= 5) == (cut >= 4), pipelined
        bad = b"k,x\n" + _csv(rows[:15000]) + b"1,zz\n"
        with pytest.raises(PgError) as err:
            _copy(s, bad, cut if cut > 4 else 3000, "(FORMAT csv, HEADER)")
        assert err.value.context == 'COPY ps, line 15002, column x: "zz"'


def _frames(data: bytes, piece: int) -> bytes:
    """``data`` as CopyData messages of ``piece`` bytes (cut anywhere in a line)."""
    return b"".join(b"d" + (len(data[i:i + piece]) + 4).to_bytes(4, "big") + data[i:i + piece]
                    for i in range(0, len(data), piece))


def _copy_spans(s, data: bytes, piece: int, read: int, options: str = "(FORMAT csv)") -> tuple[str, int, int]:
    """COPY ``data`` as the server's event loop feeds it: CopyData messages
    read ``read`` bytes at a time into a ``FrontendReader``, the payloads
    (and the part of one received) handed where they lie (``feed_spans``),
    or, where the sink declines them, as messages (``feed``).  The tag, and the payloads fed each way."""
    from splitstream.protocol import messages
    sink = s.execute_sql(f"COPY ps FROM STDIN {options}").copy_in
    reader = messages.FrontendReader()
    reader.startup_phase = False
    wire = _frames(data, piece)
    in_place = as_messages = 0
    for i in range(0, len(wire), read):
        reader.feed(wire[i:i + read])
        buf, spans, end, rest = reader.copy_frames()
        if spans and sink.feed_spans(buf, spans):
            reader.skip_to(end, rest)
            in_place += len(spans)
        while (m := reader.next_message()) is not None:
            sink.feed(m.body)
            as_messages += 1
    return sink.finish(), in_place, as_messages


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_payloads_fed_where_they_lie_give_every_row_once_in_order(tmp_path, pipelined, backend):
    """Payloads copied from the read buffer into slabs (reused from one COPY
    to the next) are parsed in order, lines cut by payloads and by slabs included."""
    with open_engine(str(tmp_path / "d")) as eng:
        s = plain_session(eng)
        _setup(s, backend)
        rows = []
        for n, piece, read in ((40000, 5000, 12289), (30000, 1021, 65536), (25000, 70001, 300000)):
            more = _rows(n, len(rows))
            rows += more
            tag, in_place, _ = _copy_spans(s, _csv(more), piece, read)
            assert tag == f"COPY {n}" and in_place > 0
            assert result_rows(s, "SELECT * FROM pv ORDER BY k") == _want(rows)
        assert len(pipelined) >= 10, pipelined


def test_payloads_in_place_then_quoted_then_bad(tmp_path, pipelined):
    """A quoted field makes the sink decline payloads in place: they are fed
    as messages, after the ones before, in order; a bad row after payloads
    fed in place fails the whole COPY with PostgreSQL's error and line."""
    rows = _rows(30000)
    lines = [f"{k},{x}\n" for k, x in rows]
    for i in range(20000, len(lines), 1500):
        lines[i] = f'"{rows[i][0]}",{rows[i][1]}\n'
    with open_engine(str(tmp_path / "d")) as eng:
        s = plain_session(eng)
        _setup(s)
        tag, in_place, as_messages = _copy_spans(s, "".join(lines).encode(), 4099, 20000)
        assert tag == "COPY 30000" and in_place > 0 and as_messages > 0
        assert result_rows(s, "SELECT * FROM pv ORDER BY k") == _want(rows)
        bad = _csv(_rows(20000, 30000)) + b"1,zz\n" + _csv(_rows(100, 50000))
        with pytest.raises(PgError) as err:
            _copy_spans(s, bad, 8192, 40000)
        assert err.value.sqlstate == "22P02" and err.value.context == 'COPY ps, line 20001, column x: "zz"'
        assert result_rows(s, "SELECT * FROM pv ORDER BY k") == _want(rows)
