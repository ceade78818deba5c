"""COPY FROM STDIN against PostgreSQL 15, differentially: the same table, the
same options and the same bytes on both servers give the same rows, or the
same SQLSTATE, message and CONTEXT (``COPY t, line N, column c: "v"``), and
a failed COPY leaves nothing behind.  Inputs cover text and CSV escapes and
quoting, options, timestamps (zones, offsets, BC, infinity, DST gaps and
overlaps), numeric edge values and bad rows; large generated inputs go
through the bulk readers (the compiled one once it has compiled)."""
from __future__ import annotations

import random
import time
from typing import Any

import psycopg
import pytest

from tests.support import event_times

Outcome = tuple[str, Any]

TS_COLS = "id int, tz timestamptz, ts timestamp, d date"
NUM_COLS = "id int, a int2, b int4, c int8, f float8, r float4, n numeric, ok bool"
TEXT_COLS = "id int, t text, v varchar(20), k int"


def _copy(conn: psycopg.Connection, table: str, cols: str, options: str, data: bytes, zone: str) -> Outcome:
    """Create ``table``, COPY ``data`` into it; its rows (as text) or the error."""
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} ({cols})")
    conn.execute(f"SET TimeZone = '{zone}'")
    try:
        with conn.cursor() as cur:
            with cur.copy(f"COPY {table} FROM STDIN {options}") as cp:
                for i in range(0, len(data), 65536):
                    cp.write(data[i:i + 65536])
    except psycopg.Error as e:
        left = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        return "error", (e.sqlstate, e.diag.message_primary, e.diag.context, left)
    names = [c.split()[0] for c in cols.split(",")]
    rows = conn.execute(f"SELECT {', '.join(n + '::text' for n in names)} FROM {table} ORDER BY {table}.id").fetchall()
    return "rows", rows


def _both(ss_conn, pg_conn, table: str, cols: str, options: str, data: bytes, zone: str = "UTC") -> Outcome:
    try:
        want = _copy(pg_conn, table, cols, options, data, zone)
        got = _copy(ss_conn, table, cols, options, data, zone)
    finally:
        pg_conn.execute(f"DROP TABLE IF EXISTS {table}")
        pg_conn.execute("RESET TimeZone")
        ss_conn.execute("RESET TimeZone")
    assert got == want
    return got


# (columns, options, data, zone)
CASES: dict[str, tuple[str, str, bytes, str]] = {
    "text escapes": (TEXT_COLS, "", b"1\ta\\tb\\nc\\\\d\t\\N\t1\n2\t\\x41\\101\\b\\f\\v\\r\tx\t\\N\n3\t\t\t4\n"
                                      b"4\t\\N\t\\\\N\t5\n5\tend\\.\t\\.x\t6\n", "UTC"),
    "text end marker": (TEXT_COLS, "", b"1\ta\tb\t1\n\\.\n2\tnot\tread\t2\n", "UTC"),
    "text crlf": (TEXT_COLS, "", b"1\ta\tb\t1\r\n2\tc\td\t2\r\n", "UTC"),
    "text delimiter": (TEXT_COLS, "(DELIMITER '|', NULL 'nil')", b"1|a\\|b|nil|1\n2|nil|\\N|nil\n", "UTC"),
    "text bad escape octal": (TEXT_COLS, "", b"1\t\\777\tx\t1\n", "UTC"),
    "csv quoting": (TEXT_COLS, "(FORMAT csv)",
                    b'1,"a,b","say ""hi""",1\n2,"multi\nline",,\n3,"",x,3\n4,"\\N",\\N,4\n', "UTC"),
    "csv header null": (TEXT_COLS, "(FORMAT csv, HEADER, NULL 'x')", b"id,t,v,k\n1,x,\"x\",x\n2,,y,2\n", "UTC"),
    "csv force null": (TEXT_COLS, "(FORMAT csv, FORCE_NULL (t, v))", b'1,"",x,1\n2,,"",2\n', "UTC"),
    "csv force not null": (TEXT_COLS, "(FORMAT csv, FORCE_NOT_NULL (t))", b'1,,"",1\n2,a,,\n', "UTC"),
    "csv delimiter quote escape": (TEXT_COLS, "(FORMAT csv, DELIMITER ';', QUOTE '''', ESCAPE '\\')",
                                   b"1;'a;b';'it\\'s';1\n2;x;'\\\\';2\n", "UTC"),
    "csv legacy": (TEXT_COLS, "CSV HEADER DELIMITER AS '|'", b"h|h|h|h\n1|\"a|b\"|c|1\n", "UTC"),
    "csv unterminated": (TEXT_COLS, "(FORMAT csv)", b'1,"abc,x,1\n', "UTC"),
    "csv unterminated later": (TEXT_COLS, "(FORMAT csv)", b'1,a,b,1\n2,"x\ny\n3,c,d,3\n', "UTC"),
    "csv bad value after quoted newline": (TEXT_COLS, "(FORMAT csv)", b'1,"a\nb",c,1\n2,x,y,zz\n', "UTC"),
    "csv bad value after later quoted newline": (TEXT_COLS, "(FORMAT csv)", b'0,a,b,0\n1,"a\nb",c,1\n2,x,y,zz\n',
                                                 "UTC"),
    "text bad utf8 escape": (TEXT_COLS, "", b"1\t\\xc3\\x28\tx\t1\n", "UTC"),
    "text utf8 escapes": (TEXT_COLS, "", b"1\t\\xc3\\xa9\\303\\251\tx\t1\n", "UTC"),
    "long line in context": (TEXT_COLS, "", b"1\t" + "\u00e9".encode() * 80 + b"\tx\n", "UTC"),
    "long value in context": (TEXT_COLS, "", b"1\tx\ty\t" + b"9" * 150 + b"\n", "UTC"),
    "csv header match": (TEXT_COLS, "(FORMAT csv, HEADER match)", b"id,t,v,k\n1,a,b,1\n", "UTC"),
    "csv header mismatch": (TEXT_COLS, "(FORMAT csv, HEADER match)", b"id,x,v,k\n1,a,b,1\n", "UTC"),
    "extra column": (TEXT_COLS, "(FORMAT csv)", b"1,a,b,1\n2,a,b,2,9\n", "UTC"),
    "missing column": (TEXT_COLS, "", b"1\ta\tb\t1\n2\ta\n", "UTC"),
    "varchar too long": (TEXT_COLS, "", b"0\ta\tb\t0\n1\ta\t" + b"y" * 21 + b"\t1\n", "UTC"),
    "varchar too long after header": (TEXT_COLS, "(FORMAT csv, HEADER)", b"id,t,v,k\n0,a,b,0\n1,a," + b"y" * 121 + b",1\n",
                                      "UTC"),
    "numbers": (NUM_COLS, "(FORMAT csv)",
                b"1,32767,-2147483648,9223372036854775807,1e308,3.4e38,123456789012345678901234567890.1234567890,t\n"
                b"2,-0, 7 ,-0,-0,1.5e-45,-0.000,yes\n"
                b"3,0,0,0,NaN,-Infinity,NaN,off\n"
                b"4,,,,,,,\n"
                b"5,1,2,3,4.94e-324,1e-46,1e-5,FALSE\n"
                b"6,1,2,3,0.1,0.1,Infinity,1\n", "UTC"),
    "int2 overflow": (NUM_COLS, "(FORMAT csv)", b"1,1,1,1,1,1,1,t\n2,32768,1,1,1,1,1,t\n", "UTC"),
    "int4 bad": (NUM_COLS, "(FORMAT csv)", b"1,1,abc,1,1,1,1,t\n", "UTC"),
    "int8 overflow": (NUM_COLS, "(FORMAT csv)", b"1,1,1,9223372036854775808,1,1,1,t\n", "UTC"),
    "float8 overflow": (NUM_COLS, "(FORMAT csv)", b"1,1,1,1,1e309,1,1,t\n", "UTC"),
    "float4 overflow": (NUM_COLS, "(FORMAT csv)", b"1,1,1,1,1,1e39,1,t\n", "UTC"),
    "numeric bad": (NUM_COLS, "(FORMAT csv)", b"1,1,1,1,1,1,1.2.3,t\n", "UTC"),
    "bool bad": (NUM_COLS, "(FORMAT csv)", b"1,1,1,1,1,1,1,maybe\n", "UTC"),
    "timestamps": (TS_COLS, "(FORMAT csv)",
                   b"1,2024-01-01 00:00:00+05,2024-01-01 00:00:00,2024-01-01\n"
                   b"2,2024-01-01T00:00:00Z,2024-02-29T23:59:59.999999,2024-02-29\n"
                   b"3,2024-06-30 12:34:56.5-03:30,2024-06-30 12:34:56.5,0001-01-01\n"
                   b"4,2024-01-01 00:00:00.1234567+00,2024-01-01 00:00:00.1234565,9999-12-31\n"
                   b"5,infinity,-infinity,infinity\n"
                   b"6,0044-03-15 12:00:00+00,0044-03-15 12:00:00,0044-03-15\n"
                   b"7,2024-12-31 23:59:60+00,2024-12-31 24:00:00,2024-1-2\n"
                   b"8,2024-01-01 00:00:00+15:59,2024-01-01 00:00:00+05,20240101\n"
                   b"9,2024-01-01 00:00:00+0530,2024-01-01 00:00,2024-01-01 10:00:00\n"
                   b"10, 2024-01-01 00:00:00+00 ,2024-01-01, 2024-01-02\n"
                   b"11,2024-01-01 00:00:00 Europe/Paris,2024-01-01 00:00:00.,epoch\n"
                   b"12,2024-03-31 01:00:00,1999-01-08 04:05:06,1999-01-08\n"
                   b"13,,,\n", "UTC"),
    "timestamps quoted": (TS_COLS, "(FORMAT csv)", b'1,"2024-01-01 00:00:00+05","2024-01-01 00:00:00","2024-01-01"\n'
                                                   b'2,"",,""\n', "UTC"),
    "timestamps with delimiter": (TS_COLS, "(FORMAT csv, DELIMITER ';')", b"1;2024-01-01 00:00:00+05;2024-01-01 00:00:00;2024-01-01\n",
                                  "UTC"),
    "timestamps text nulls": (TS_COLS, "", b"1\t2024-01-01 00:00:00+00\t\\N\t2024-01-01\n2\t\\N\t2024-01-01 00:00:00\t\\N\n",
                              "UTC"),
    "timestamptz offset 16": (TS_COLS, "(FORMAT csv)", b"1,2024-01-01 00:00:00+16,,\n", "UTC"),
    "timestamp bad day": (TS_COLS, "(FORMAT csv)", b"1,,2023-02-29 00:00:00,\n", "UTC"),
    "date bad": (TS_COLS, "(FORMAT csv)", b"1,,,2024-13-01\n", "UTC"),
    "timestamptz garbage": (TS_COLS, "(FORMAT csv)", b"1,yesterday-ish,,\n", "UTC"),
    "berlin gap and overlap": (TS_COLS, "(FORMAT csv)",
                               b"1,2024-03-31 01:59:59,,\n2,2024-03-31 02:00:00,,\n3,2024-03-31 02:30:00,,\n"
                               b"4,2024-03-31 03:00:00,,\n5,2024-10-27 01:59:59,,\n6,2024-10-27 02:00:00,,\n"
                               b"7,2024-10-27 02:30:00,,\n8,2024-10-27 03:00:00,,\n9,2024-10-27 02:30:00+02,,\n",
                               "Europe/Berlin"),
    "lord howe half hour": (TS_COLS, "(FORMAT csv)",
                            b"1,2024-04-07 01:30:00,,\n2,2024-04-07 01:45:00,,\n3,2024-04-07 02:15:00,,\n"
                            b"4,2024-10-06 02:00:00,,\n5,2024-10-06 02:15:00,,\n6,2024-10-06 02:45:00,,\n",
                            "Australia/Lord_Howe"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_copy_matches_postgres(ss_conn, pg_conn, unique_name, case):
    cols, options, data, zone = CASES[case]
    _both(ss_conn, pg_conn, unique_name(), cols, options, data, zone)


def _timestamp(rng: random.Random) -> str:
    """A timestamptz in one of the spellings clients write, mostly the strict ISO one."""
    y, mo, d = rng.randint(1, 9999), rng.randint(1, 12), rng.randint(1, 28)
    h, mi, s = rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)
    base = f"{y:04d}-{mo:02d}-{d:02d}{rng.choice(' T')}{h:02d}:{mi:02d}:{s:02d}"
    frac = rng.choice(["", "", f".{rng.randint(0, 999999):06d}", f".{rng.randint(0, 999)}"])
    zone = rng.choice(["", "+00", "Z", f"-{rng.randint(0, 14):02d}", f"+{rng.randint(0, 14):02d}:{rng.choice([0, 30, 45]):02d}",
                       f"+{rng.randint(0, 14):02d}{rng.randint(0, 59):02d}"])
    return base + frac + zone


@pytest.mark.parametrize("fmt", ["csv", "text"])
@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "America/New_York"])
def test_generated_timestamps_match_postgres(ss_conn, pg_conn, unique_name, zone, fmt):
    """Thousands of rows, so the bulk readers take them; COPYed twice, so the
    second COPY finds the compiled reader built (it compiles in the background)."""
    rng = random.Random(zone + fmt)
    lines = []
    for i in range(4000):
        tz = _timestamp(rng) if rng.random() > 0.05 else ""
        ts = _timestamp(rng).rstrip("Z")
        ts = ts[:19] + ts[19:].split("+")[0].split("-")[0] if rng.random() < 0.9 else ""
        fields = [str(i), tz, ts, ts[:10]]
        if fmt == "text":
            fields = [f or "\\N" for f in fields]
        elif tz and rng.random() < 0.1:
            fields[1] = f'"{tz}"'          # a quoted value: the compiled reader leaves the chunk to pyarrow
        lines.append(("," if fmt == "csv" else "\t").join(fields))
    data = ("\n".join(lines) + "\n").encode()
    table = unique_name()
    first = _both(ss_conn, pg_conn, table, TS_COLS, f"(FORMAT {fmt})", data, zone)
    time.sleep(1.0)
    assert _both(ss_conn, pg_conn, table, TS_COLS, f"(FORMAT {fmt})", data, zone) == first
    assert first[0] == "rows" and len(first[1]) == 4000, first


@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
@pytest.mark.parametrize("misses", ["none", "pg reads"])
def test_event_times_match_postgres(ss_conn, pg_conn, unique_name, zone, misses):
    """Nearly sorted event times (the compiled reader's fixed-width path,
    which reuses the previous row's minute: six and three fractional digits,
    zones, leap days, year ends, NULLs), and spellings PostgreSQL reads its
    own way mixed in (a leap second, seven digits, a zone on a timestamp, no
    seconds), which that path must leave to the exact one.  COPYed twice:
    the second COPY finds the compiled reader built."""
    data = event_times.event_rows(len(zone) + len(misses), 12000, event_times.PG_READS if misses == "pg reads" else ())
    table = unique_name()
    first = _both(ss_conn, pg_conn, table, TS_COLS, "(FORMAT csv)", data, zone)
    time.sleep(1.0)
    assert _both(ss_conn, pg_conn, table, TS_COLS, "(FORMAT csv)", data, zone) == first
    assert first[0] == "rows" and len(first[1]) == 12000, first[1] if first[0] == "error" else len(first[1])


def test_bad_row_deep_in_a_large_copy(ss_conn, pg_conn, unique_name):
    """A bad value after many good rows (several decode slabs): PostgreSQL's
    error and line, and nothing of the COPY applied."""
    good = b"".join(b"%d,2024-01-01 00:00:%02d+00,2024-01-01 00:00:00,2024-01-01\n" % (i, i % 60) for i in range(300000))
    data = good + b"300000,2024-01-01 00:00:00+00,2024-01-01 25:00:00,2024-01-01\n"
    kind, (state, _msg, context, left) = _both(ss_conn, pg_conn, unique_name(), TS_COLS, "(FORMAT csv)", data)
    assert kind == "error" and state == "22008" and "line 300001" in context and left == (0,)


@pytest.mark.parametrize("bad", [None, b'7,"12\n34"\n', b"7,zz\n"])
def test_pipelined_slabs_match_postgres(ss_conn, pg_conn, unique_name, bad):
    """Several MiB of numbers: the slabs are parsed on decode threads while
    the next arrive (quoted rows make a slab take the general path, some
    straddling the 64 kB payloads); a bad row near the end fails all of it
    with PostgreSQL's error and line."""
    lines = [b"%d,%d\n" % (i, i * 31 % 65536) for i in range(400000)]
    for i in range(0, len(lines), 9973):
        lines[i] = b'"%d","%d"\n' % (i, i * 31 % 65536)
    if bad is not None:
        lines[390001] = bad
    kind, out = _both(ss_conn, pg_conn, unique_name(), "id int, x int", "(FORMAT csv)", b"".join(lines))
    if bad is None:
        assert (kind, len(out)) == ("rows", 400000)
    else:
        assert kind == "error" and "line 39000" in out[2] and out[3] == (0,), out
    time.sleep(1.0)       # again with the compiled reader surely built
    _both(ss_conn, pg_conn, unique_name(), "id int, x int", "(FORMAT csv)", b"".join(lines))


@pytest.mark.parametrize("fmt", ["text", "csv"])
def test_rows_after_the_end_marker_of_a_large_copy_are_ignored(ss_conn, pg_conn, unique_name, fmt):
    """The end-of-data marker in an early slab: PostgreSQL ignores every row
    after it, however much follows (later slabs are never decoded)."""
    sep = b"\t" if fmt == "text" else b","
    rows = [b"%d%s%d\n" % (i, sep, i * 7) for i in range(300000)]
    rows.insert(20000, b"\\.\n")
    kind, out = _both(ss_conn, pg_conn, unique_name(), "id int, x int", f"(FORMAT {fmt})", b"".join(rows))
    assert (kind, len(out)) == ("rows", 20000)


def test_copy_into_stream_matches_table(ss_conn, pg_conn, unique_name):
    """COPY into a stream: a view keyed by id holds each row as PostgreSQL's table does."""
    rng = random.Random(16)
    lines = [f"{i},{_timestamp(rng)},{rng.randint(-1000, 1000)}" for i in range(5000)]
    data = ("\n".join(lines) + "\n").encode()
    s = unique_name("s")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (id int, tz timestamptz, x int) SERVER stream")
    ss_conn.execute(f"CREATE VIEW {s}_v AS SELECT id, max(tz) AS tz, sum(x) AS x, count(*) AS n FROM {s} GROUP BY id")
    pg_conn.execute(f"CREATE TABLE {s} (id int, tz timestamptz, x int)")
    try:
        for conn in (ss_conn, pg_conn):
            with conn.cursor() as cur, cur.copy(f"COPY {s} FROM STDIN (FORMAT csv)") as cp:
                cp.write(data)
        got = ss_conn.execute(f"SELECT id, tz::text, x, n FROM {s}_v ORDER BY id").fetchall()
        want = pg_conn.execute(f"SELECT id, tz::text, x::bigint, 1::bigint FROM {s} ORDER BY id").fetchall()
        assert got == want
        with pytest.raises(psycopg.Error) as err:
            with ss_conn.cursor() as cur, cur.copy(f"COPY {s} FROM STDIN (FORMAT csv)") as cp:
                cp.write(data + b"5000,2024-01-01 00:00:00+00,x\n")
        assert err.value.sqlstate == "22P02" and "line 5001, column x" in (err.value.diag.context or "")
        assert ss_conn.execute(f"SELECT count(*) FROM {s}_v").fetchone() == (5000,)
    finally:
        pg_conn.execute(f"DROP TABLE IF EXISTS {s}")


@pytest.mark.parametrize("options,state", [
    ("(FORMAT csv, FREEZE)", "0A000"),
    ("(ENCODING 'LATIN1')", "0A000"),
    ("(DEFAULT 'x')", "42601"),                       # a PostgreSQL 16 option: unknown to 15
    ("(FORMAT csv) WHERE id > 1", "0A000"),
    ("CSV BOGUS", "42601"),
    ("CSV FORCE NOT NULL t", None),
    ("(ENCODING 'UTF8')", None),
])
def test_options_refused_or_applied(ss_conn, unique_name, options, state):
    """An option COPY does not implement is refused, never ignored."""
    t = unique_name()
    ss_conn.execute(f"CREATE TABLE {t} ({TEXT_COLS})")
    try:
        with ss_conn.cursor() as cur, cur.copy(f"COPY {t} FROM STDIN {options}") as cp:
            cp.write(b"1,a,b,1\n" if "CSV" in options.upper() else b"1\ta\tb\t1\n")
    except psycopg.Error as e:
        assert e.sqlstate == state, e
        assert state == "42601" or e.diag.message_hint
        return
    assert state is None
    assert ss_conn.execute(f"SELECT count(*) FROM {t}").fetchone() == (1,)


def test_binary_copy_of_postgres_output(ss_conn, pg_conn, unique_name):
    """PostgreSQL's own binary COPY output, sent in many small messages into a
    table and a stream, reads back as PostgreSQL's rows."""
    rng = random.Random(5)
    t = unique_name()
    data = ("\n".join(f"{i},{_timestamp(rng)},{rng.randint(-99, 99)}" for i in range(20000)) + "\n").encode()
    pg_conn.execute(f"CREATE TABLE {t} (id int, tz timestamptz, x int)")
    try:
        with pg_conn.cursor() as cur, cur.copy(f"COPY {t} FROM STDIN (FORMAT csv)") as cp:
            cp.write(data)
        with pg_conn.cursor() as cur, cur.copy(f"COPY {t} TO STDOUT (FORMAT binary)") as cp:
            binary = b"".join(bytes(b) for b in cp)
        want = pg_conn.execute(f"SELECT id, tz::text, x FROM {t} ORDER BY id").fetchall()
    finally:
        pg_conn.execute(f"DROP TABLE IF EXISTS {t}")
    ss_conn.execute(f"CREATE TABLE {t} (id int, tz timestamptz, x int)")
    ss_conn.execute(f"CREATE FOREIGN TABLE {t}_s (id int, tz timestamptz, x int) SERVER stream")
    ss_conn.execute(f"CREATE VIEW {t}_v AS SELECT id, max(tz) AS tz, sum(x) AS x FROM {t}_s GROUP BY id")
    for target in (t, f"{t}_s"):
        with ss_conn.cursor() as cur, cur.copy(f"COPY {target} FROM STDIN (FORMAT binary)") as cp:
            for i in range(0, len(binary), 8192):
                cp.write(binary[i:i + 8192])
    assert ss_conn.execute(f"SELECT id, tz::text, x FROM {t} ORDER BY id").fetchall() == want
    assert ss_conn.execute(f"SELECT id, tz::text, x::int FROM {t}_v ORDER BY id").fetchall() == want
