"""Tests for protocol.copy: options, text/CSV/binary decode and encode, vs PostgreSQL 15."""
from __future__ import annotations

import datetime as dt
import io
import random
import sys
from decimal import Decimal

import numpy as np
import pytest

from splitstream.protocol import types as wiretypes
from splitstream.protocol.copy import (
    BinaryCopyDecoder,
    decode_copy,
    encode_copy_rows,
    parse_copy_options,
    split_complete,
)
from splitstream.protocol.errors import PgError
from tests.support.servers import Postgres15, postgres15_available

needs_pg = pytest.mark.skipif(not postgres15_available(), reason="PostgreSQL 15 not available")
TEXT = parse_copy_options({})
CSV = parse_copy_options({"format": "csv"})
BINARY = parse_copy_options({"format": "binary"})


@pytest.fixture(scope="module")
def pg():
    psycopg = pytest.importorskip("psycopg")
    with Postgres15() as server:
        conn = psycopg.connect(server.dsn, autocommit=True)
        yield conn
        conn.close()


def pylists(cols, oids):
    return [wiretypes.column_to_pylist(o, v, m) for (v, m), o in zip(cols, oids)]


# ---------------------------------------------------------------- options


def test_option_defaults() -> None:
    assert (TEXT.delimiter, TEXT.null, TEXT.header) == ("\t", "\\N", False)
    assert (CSV.delimiter, CSV.null, CSV.quote, CSV.escape) == (",", "", '"', '"')
    o = parse_copy_options({"FORMAT": "csv", "header": "true", "delimiter": ";", "escape": "\\"})
    assert (o.header, o.delimiter, o.escape) == (True, ";", "\\")
    assert parse_copy_options({"format": "csv", "header": "match"}).header_match


@pytest.mark.parametrize("opts,code,msg", [
    ({"format": "xml"}, "22023", 'COPY format "xml" not recognized'),
    ({"delimiter": "ab"}, "0A000", "COPY delimiter must be a single one-byte character"),
    ({"delimiter": "\n"}, "22023", "COPY delimiter cannot be newline or carriage return"),
    ({"delimiter": "a"}, "22023", 'COPY delimiter cannot be "a"'),
    ({"quote": "'"}, "0A000", "COPY quote available only in CSV mode"),
    ({"format": "csv", "delimiter": '"'}, "22023", "COPY delimiter and quote must be different"),
    ({"format": "binary", "delimiter": ","}, "42601", "cannot specify DELIMITER in BINARY mode"),
    ({"null": "a,b", "delimiter": ","}, "22023", "COPY delimiter must not appear in the NULL specification"),
    ({"bogus": 1}, "42601", 'option "bogus" not recognized'),
    ({"header": "maybe"}, "22023", 'header requires a Boolean value or "match"'),
])
def test_option_errors(opts, code, msg) -> None:
    with pytest.raises(PgError) as ei:
        parse_copy_options(opts)
    assert (ei.value.sqlstate, ei.value.message) == (code, msg)


# ---------------------------------------------------------------- text / csv decode


def test_text_decode_basic_and_escapes() -> None:
    oids = [wiretypes.INT4, wiretypes.TEXT, wiretypes.FLOAT8]
    cols = decode_copy(b"1\ta\t1.5\n2\t\\N\t\\N\n\\.\n", TEXT, oids)
    assert pylists(cols, oids) == [[1, 2], ["a", None], [1.5, None]]
    cols = decode_copy(b"1\ta\\tb\\\\c\\nd\\x41\\101\n", TEXT, [wiretypes.INT4, wiretypes.TEXT])
    assert pylists(cols, [wiretypes.INT4, wiretypes.TEXT])[1] == ["a\tb\\c\ndAA"]
    cols = decode_copy(b"\\N\t\\\\N\n", TEXT, [wiretypes.TEXT, wiretypes.TEXT])
    assert pylists(cols, [wiretypes.TEXT, wiretypes.TEXT]) == [[None], ["\\N"]]


def test_csv_decode_quotes_and_nulls() -> None:
    oids = [wiretypes.INT4, wiretypes.TEXT]
    opts = parse_copy_options({"format": "csv", "header": True})
    data = b'a,b\n1,"x,y"\n2,""\n3,\n4,"multi\nline"\n5,"say ""hi"""\n'
    assert pylists(decode_copy(data, opts, oids), oids) == [
        [1, 2, 3, 4, 5], ["x,y", "", None, "multi\nline", 'say "hi"']]
    # header only skipped on the first chunk
    assert pylists(decode_copy(b"6,z\n", opts, oids, first_line=7), oids) == [[6], ["z"]]


def test_csv_force_null_and_not_null() -> None:
    oids = [wiretypes.TEXT, wiretypes.TEXT]
    opts = parse_copy_options({"format": "csv", "force_not_null": ["a"], "force_null": ["b"]})
    cols = decode_copy(b',""\n', opts, oids, column_names=["a", "b"])
    assert pylists(cols, oids) == [[""], [None]]


@pytest.mark.parametrize("data,opts,msg,line", [
    (b"1\tx\n2\n", TEXT, 'missing data for column "b"', 2),
    (b"1\tx\ty\n", TEXT, "extra data after last expected column", 1),
    (b"1\tx\nabc\ty\n", TEXT, 'invalid input syntax for type integer: "abc"', 2),
    (b'1,x\n2,"abc\n', CSV, "unterminated CSV quoted field", 3),  # PG counts the EOF line
    (b"1,x\n2,y\n99999999999,z\n", CSV, 'value "99999999999" is out of range for type integer', 3),
    # a newline inside quotes counts only after the first line end (CopyReadLineText's eol_type)
    (b'1,"a\nb"\n2,y\nq,z\n', CSV, 'invalid input syntax for type integer: "q"', 3),
    (b'0,x\n1,"a\nb"\n2,y\nq,z\n', CSV, 'invalid input syntax for type integer: "q"', 5),
])
def test_decode_errors_with_line(data, opts, msg, line) -> None:
    with pytest.raises(PgError) as ei:
        decode_copy(data, opts, [wiretypes.INT4, wiretypes.TEXT], column_names=["a", "b"])
    assert ei.value.message == msg
    assert ei.value.extra["line"] == line


def test_first_line_offsets_error_line() -> None:
    with pytest.raises(PgError) as ei:
        decode_copy(b"1\tx\nbad\ty\n", TEXT, [wiretypes.INT4, wiretypes.TEXT], first_line=101)
    assert ei.value.extra["line"] == 102


def test_typed_columns() -> None:
    oids = [wiretypes.BOOL, wiretypes.INT2, wiretypes.INT8, wiretypes.FLOAT4, wiretypes.NUMERIC, wiretypes.DATE, wiretypes.TIMESTAMP, wiretypes.TIMESTAMPTZ,
            wiretypes.UUID, wiretypes.INTERVAL, wiretypes.JSONB, 1007]
    line = (b"t\t-5\t9000000000\t1.5\t1.50\t2024-01-02\t2024-01-02 03:04:05.5\t2024-01-02 03:04:05+02"
            b"\ta0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\t1 day\t{\"b\":1,\"a\":2}\t{1,NULL}\n")
    for opts, data in ((TEXT, line), (CSV, line.replace(b"\t", b",").replace(b"{1,NULL}", b'"{1,NULL}"')
                                      .replace(b'{"b":1,"a":2}', b'"{""b"":1,""a"":2}"'))):
        cols = decode_copy(data, opts, oids)
        assert cols[0][0].dtype == np.bool_ and cols[1][0].dtype == np.int16 and cols[3][0].dtype == np.float32
        assert cols[5][0].dtype == np.dtype("datetime64[D]") and cols[7][0].dtype == np.dtype("datetime64[us]")
        vals = [c[0] for c in pylists(cols, oids)]
        assert vals[:5] == [True, -5, 9_000_000_000, 1.5, Decimal("1.50")]
        assert vals[5] == dt.date(2024, 1, 2)
        assert vals[6] == dt.datetime(2024, 1, 2, 3, 4, 5, 500000)
        assert vals[7] == dt.datetime(2024, 1, 2, 1, 4, 5, tzinfo=dt.timezone.utc)
        assert vals[9] == wiretypes.Interval(0, 1, 0)
        assert vals[10] == '{"a": 2, "b": 1}'
        assert vals[11] == [1, None]


def test_fast_path_rejects_what_postgres_rejects() -> None:
    for bad in (b"0x1f\n", b"1e400\n", b"1_000\n", b"\n"):
        oid = wiretypes.FLOAT8 if b"e" in bad else wiretypes.INT4
        with pytest.raises(PgError):
            decode_copy(bad, TEXT, [oid])
    # and accepts what PostgreSQL accepts but pyarrow does not
    assert pylists(decode_copy(b"+5\n TRUE \n", TEXT, [wiretypes.TEXT]), [wiretypes.TEXT]) == [["+5", " TRUE "]]
    assert pylists(decode_copy(b"+5\t TRUE \n", TEXT, [wiretypes.INT4, wiretypes.BOOL]), [wiretypes.INT4, wiretypes.BOOL]) == [[5], [True]]


def test_split_complete() -> None:
    assert split_complete(b"1\t2\n3\t", TEXT) == (b"1\t2\n", b"3\t")
    assert split_complete(b'1,"a\nb"\n2,"c\n', CSV) == (b'1,"a\nb"\n', b'2,"c\n')
    assert split_complete(b'1,"a""\nb"\n', CSV) == (b'1,"a""\nb"\n', b"")
    assert split_complete(b"no newline", TEXT) == (b"", b"no newline")
    esc = parse_copy_options({"format": "csv", "escape": "\\"})
    assert split_complete(b'1,"a\\"\n"\n2', esc) == (b'1,"a\\"\n"\n', b"2")


def test_decode_large_six_int_columns() -> None:
    """Half a million rows through the vectorised path decode exactly (speed
    is measured in bench/ingest.py, not asserted here)."""
    n = 500_000
    rng = np.random.default_rng(1)
    cols = [rng.integers(-10**6, 10**6, n).astype(np.int32) for _ in range(6)]
    data = encode_copy_rows([(c, None) for c in cols], [wiretypes.INT4] * 6, TEXT)
    out = decode_copy(data, TEXT, [wiretypes.INT4] * 6)
    assert all((o[0] == c).all() for o, c in zip(out, cols))


# ---------------------------------------------------------------- encode


def test_encode_text_and_csv() -> None:
    oids = [wiretypes.INT4, wiretypes.TEXT, wiretypes.FLOAT8]
    cols = [wiretypes.pylist_to_column(wiretypes.INT4, [1, None]), wiretypes.pylist_to_column(wiretypes.TEXT, ["a\tb\\c\nd", 'q"x,y']),
            wiretypes.pylist_to_column(wiretypes.FLOAT8, [1e20, 0.1])]
    assert encode_copy_rows(cols, oids, TEXT) == b"1\ta\\tb\\\\c\\nd\t1e+20\n\\N\tq\"x,y\t0.1\n"
    hdr = parse_copy_options({"format": "csv", "header": True}, is_from=False)
    assert encode_copy_rows(cols, oids, hdr, column_names=["a", "b", "c"]) == \
        b'a,b,c\n1,"a\tb\\c\nd",1e+20\n,"q""x,y",0.1\n'


# ---------------------------------------------------------------- binary


def test_binary_roundtrip_and_chunking() -> None:
    oids = [wiretypes.INT4, wiretypes.TEXT, wiretypes.FLOAT8, wiretypes.NUMERIC, wiretypes.TIMESTAMPTZ, wiretypes.BOOL, 1009]
    rows = [
        [1, "a", 1.5, Decimal("1.50"), dt.datetime(2024, 1, 2, tzinfo=dt.timezone.utc), True, ["x", None]],
        [None, None, None, None, None, None, None],
        [-7, "é\n", float("inf"), Decimal("-0.001"), dt.datetime(1999, 1, 1, tzinfo=dt.timezone.utc), False, []],
    ]
    cols = [wiretypes.pylist_to_column(o, [r[j] for r in rows]) for j, o in enumerate(oids)]
    data = encode_copy_rows(cols, oids, BINARY)
    rng = random.Random(5)
    for _ in range(200):
        dec = BinaryCopyDecoder(oids)
        pos = 0
        while pos < len(data):
            step = rng.randint(1, 12)
            dec.feed(data[pos:pos + step])
            pos += step
        dec.finish()
        got = pylists(dec.take_columns(), oids)
        assert got == [[r[j] for r in rows] for j in range(len(oids))]


def test_binary_fast_path_with_interruptions() -> None:
    oids = [wiretypes.INT8, wiretypes.FLOAT8, wiretypes.INT2]
    n = 1000
    vals = [list(range(n)), [i / 3 for i in range(n)], [i % 100 for i in range(n)]]
    for i in range(0, n, 97):
        vals[1][i] = None
    cols = [wiretypes.pylist_to_column(o, v) for o, v in zip(oids, vals)]
    data = encode_copy_rows(cols, oids, BINARY)
    rng = random.Random(9)
    for _ in range(20):
        dec = BinaryCopyDecoder(oids)
        pos = 0
        out = [[], [], []]
        while pos < len(data):
            step = rng.randint(1, 3000)
            dec.feed(data[pos:pos + step])
            pos += step
            for acc, col in zip(out, pylists(dec.take_columns(), oids)):
                acc.extend(col)
        dec.finish()
        assert out == vals


def test_binary_errors() -> None:
    with pytest.raises(PgError) as ei:
        BinaryCopyDecoder([wiretypes.INT4]).feed(b"NOTCOPY\n\xff\r\n\x00")
    assert ei.value.message == "COPY file signature not recognized" and ei.value.sqlstate == "22P04"
    hdr = b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8
    dec = BinaryCopyDecoder([wiretypes.INT4, wiretypes.INT4])
    with pytest.raises(PgError) as ei:
        dec.feed(hdr + b"\x00\x01\x00\x00\x00\x04\x00\x00\x00\x01")
    assert ei.value.message == "row field count is 1, expected 2"
    dec = BinaryCopyDecoder([wiretypes.INT4])
    with pytest.raises(PgError) as ei:
        dec.feed(hdr + b"\x00\x01\x00\x00\x00\x02\x00\x01")
    assert ei.value.sqlstate == "22P03" and ei.value.extra["line"] == 1
    dec = BinaryCopyDecoder([wiretypes.INT4])
    dec.feed(hdr + b"\x00\x01\x00\x00")
    with pytest.raises(PgError) as ei:
        dec.finish()
    assert ei.value.message == "unexpected EOF in COPY data"


# ---------------------------------------------------------------- differential vs PostgreSQL

TRICKY = [
    (1, "plain"), (2, ""), (3, None), (4, 'has "quotes"'), (5, "comma, here"), (6, "new\nline"),
    (7, "cr\rhere"), (8, "tab\there"), (9, "back\\slash"), (10, "\\N"), (11, "\\."), (12, " lead"),
    (13, "NULL"), (14, "é😀"), (15, '"'), (16, ","),
]


@needs_pg
@pytest.mark.parametrize("fmt", ["text", "csv", "csv_header", "binary"])
def test_copy_to_matches_postgres(pg, fmt: str) -> None:
    pg.execute("drop table if exists ct; create table ct (a int, b text, c float8, d numeric, e timestamptz)")
    with pg.cursor() as cur:
        with cur.copy("copy ct from stdin") as cp:
            for i, s in TRICKY:
                cp.write_row((i, s, i / 7, Decimal(i) / 4, dt.datetime(2024, 1, i, tzinfo=dt.timezone.utc)))
    options = {"text": "", "csv": "(format csv)", "csv_header": "(format csv, header)",
               "binary": "(format binary)"}[fmt]
    buf = io.BytesIO()
    with pg.cursor() as cur:
        with cur.copy(f"copy (select * from ct order by a) to stdout {options}") as cp:
            for chunk in cp:
                buf.write(chunk)
    expected = buf.getvalue()
    oids = [wiretypes.INT4, wiretypes.TEXT, wiretypes.FLOAT8, wiretypes.NUMERIC, wiretypes.TIMESTAMPTZ]
    opts = parse_copy_options({"format": fmt.split("_")[0], "header": fmt.endswith("header")}, is_from=False)
    cols = [wiretypes.pylist_to_column(wiretypes.INT4, [i for i, _ in TRICKY]),
            wiretypes.pylist_to_column(wiretypes.TEXT, [s for _, s in TRICKY]),
            wiretypes.pylist_to_column(wiretypes.FLOAT8, [i / 7 for i, _ in TRICKY]),
            wiretypes.pylist_to_column(wiretypes.NUMERIC, [Decimal(i) / 4 for i, _ in TRICKY]),
            wiretypes.pylist_to_column(wiretypes.TIMESTAMPTZ, [dt.datetime(2024, 1, i, tzinfo=dt.timezone.utc) for i, _ in TRICKY])]
    ours = encode_copy_rows(cols, oids, opts, column_names=list("abcde"))
    assert ours == expected
    # and decoding PostgreSQL's output gives the values back
    dopts = parse_copy_options({"format": fmt.split("_")[0], "header": fmt.endswith("header")})
    back = pylists(decode_copy(expected, dopts, oids), oids)
    assert back == pylists(cols, oids)


CSV_INPUTS = [
    b'1,"a,b"\n2,""\n3,\n4,"x""y"\n5,"multi\nline"\n6, spaced \n7,"NULL"\n8,NULL\n',
    b'1,"abc"def\n2,a"b,c"d\n3,"\\N"\n',
    b"1,x\r\n2,y\r\n",
]


@needs_pg
@pytest.mark.parametrize("data", CSV_INPUTS)
def test_csv_decode_matches_postgres(pg, data: bytes) -> None:
    pg.execute("drop table if exists cf; create table cf (a int, b text)")
    with pg.cursor() as cur:
        with cur.copy("copy cf from stdin (format csv)") as cp:
            cp.write(data)
    expected = pg.execute("select a, b from cf order by a").fetchall()
    cols = decode_copy(data, CSV, [wiretypes.INT4, wiretypes.TEXT])
    got = list(zip(*pylists(cols, [wiretypes.INT4, wiretypes.TEXT])))
    assert sorted(got, key=lambda r: r[0]) == expected


@needs_pg
def test_csv_error_line_matches_postgres(pg) -> None:
    import psycopg

    data = b'1,a\n2,"x\ny"\n3,c\nbad,d\n'
    pg.execute("drop table if exists ce; create table ce (a int, b text)")
    with pytest.raises(psycopg.Error) as ei:
        with pg.cursor() as cur:
            with cur.copy("copy ce from stdin (format csv)") as cp:
                cp.write(data)
    with pytest.raises(PgError) as ours:
        decode_copy(data, CSV, [wiretypes.INT4, wiretypes.TEXT], column_names=["a", "b"])
    assert ours.value.message == ei.value.diag.message_primary
    assert f"line {ours.value.extra['line']}," in ei.value.diag.context


@needs_pg
def test_binary_from_postgres_and_back(pg) -> None:
    oids = [wiretypes.INT4, wiretypes.INT8, wiretypes.FLOAT8, wiretypes.TEXT, wiretypes.NUMERIC, wiretypes.DATE, wiretypes.TIMESTAMP, wiretypes.INTERVAL, wiretypes.UUID, wiretypes.JSONB, 1007]
    sql = ("select i, i::int8 * 1000000000, i / 3.0::float8, 'row ' || i, (i / 7.0)::numeric(10,4), "
           "date '2024-01-01' + i, timestamp '2024-01-01' + i * interval '1 minute', i * interval '1 hour', "
           "md5(i::text)::uuid, jsonb_build_object('i', i), array[i, null] "
           "from generate_series(1, 300) i")
    buf = io.BytesIO()
    with pg.cursor() as cur:
        with cur.copy(f"copy ({sql}) to stdout (format binary)") as cp:
            for chunk in cp:
                buf.write(chunk)
    data = buf.getvalue()
    text_rows = pg.execute(f"select row(t.*)::text from ({sql}) t").fetchall()
    assert len(text_rows) == 300
    rng = random.Random(3)
    dec = BinaryCopyDecoder(oids)
    pos = 0
    while pos < len(data):
        step = rng.randint(1, 700)
        dec.feed(data[pos:pos + step])
        pos += step
    dec.finish()
    cols = dec.take_columns()
    vals = pylists(cols, oids)
    assert vals[0][:3] == [1, 2, 3] and vals[3][0] == "row 1" and vals[10][0] == [1, None]
    # our binary encoding loads into PostgreSQL and reads back identically
    pg.execute("drop table if exists bt; create table bt (a int, b int8, c float8, d text, e numeric, f date, "
               "g timestamp, h interval, i uuid, j jsonb, k int[])")
    ours = encode_copy_rows(cols, oids, BINARY)
    assert ours == data
    with pg.cursor() as cur:
        with cur.copy("copy bt from stdin (format binary)") as cp:
            cp.write(ours)
    again = pg.execute("select row(t.*)::text from bt t").fetchall()
    assert again == text_rows


def test_copy_decodes_without_pyarrow(monkeypatch):
    """pyarrow is an optional accelerator (imported inside functions): with it
    missing, COPY decodes the same values through the Python parser."""
    data = b"1,a,1.5\n2,,\n3,\"x,y\",-0.25\n"
    oids = [wiretypes.INT4, wiretypes.TEXT, wiretypes.FLOAT8]
    with_pyarrow = pylists(decode_copy(data, CSV, oids), oids)
    for name in ("pyarrow", "pyarrow.compute", "pyarrow.csv"):
        monkeypatch.setitem(sys.modules, name, None)        # import fails
    without = pylists(decode_copy(data, CSV, oids), oids)
    assert without == with_pyarrow == [[1, 2, 3], ["a", None, "x,y"], [1.5, None, -0.25]]


def test_copy_frames_are_the_copydata_payloads_at_the_head():
    """``FrontendReader.copy_frames`` gives the payload spans of the
    CopyData messages at the head, stops at another message, and reads
    nothing until ``skip_to``."""
    from splitstream.protocol import messages
    r = messages.FrontendReader()
    r.startup_phase = False
    r.feed(_msg(b"d", b"1,2\n3,") + _msg(b"d", b"4\n") + _msg(b"c", b"") + _msg(b"d", b"5,6\n"))
    buf, spans, end, rest = r.copy_frames()
    assert [bytes(buf[s:e]) for s, e in spans] == [b"1,2\n3,", b"4\n"] and rest == 0
    assert r.next_message().body == b"1,2\n3,"          # nothing was read yet
    buf, spans, end, rest = r.copy_frames()
    assert [bytes(buf[s:e]) for s, e in spans] == [b"4\n"]
    r.skip_to(end, rest)
    assert r.copy_frames()[1] == [] and r.next_message().kind == "c"


def _msg(kind: bytes, body: bytes) -> bytes:
    return kind + (len(body) + 4).to_bytes(4, "big") + body


def test_copy_frames_give_a_payload_begun_and_its_rest_next_time():
    """A CopyData message not all received counts with what came of it; the
    rest comes first next time, as a span or, if the sink declines it, as
    a CopyData message of its own; a message's header alone is not taken;
    and nothing after a payload begun is read as a message start."""
    from splitstream.protocol import messages
    r = messages.FrontendReader()
    r.startup_phase = False
    wire = _msg(b"d", b"5,6\n") + _msg(b"d", b"7,8\n9,10\n") + _msg(b"c", b"")
    r.feed(wire[:9 + 5 + 3])                       # the first message and 3 bytes of the second's payload
    buf, spans, end, rest = r.copy_frames()
    assert [bytes(buf[s:e]) for s, e in spans] == [b"5,6\n", b"7,8"] and rest == len(b"\n9,10\n")
    r.skip_to(end, rest)
    assert r.mid_message() and r.buffered() == 0 and r.next_message() is None
    r.feed(wire[17:19])                             # two more bytes of it
    buf, spans, end, rest = r.copy_frames()
    assert [bytes(buf[s:e]) for s, e in spans] == [b"\n9"] and rest == 4
    r.skip_to(end, rest)
    r.feed(wire[19:])                               # its end, then CopyDone
    m = r.next_message()                            # declined as spans: read as a message
    assert (m.kind, m.body) == ("d", b",10\n") and not r.mid_message()
    assert r.next_message().kind == "c" and r.next_message() is None

    r.feed(_msg(b"d", b"1\n")[:5])                  # a header alone: not taken
    assert r.copy_frames()[1] == [] and not r.mid_message()
    r.feed(b"1\n")
    buf, spans, end, rest = r.copy_frames()
    assert [bytes(buf[s:e]) for s, e in spans] == [b"1\n"] and rest == 0
