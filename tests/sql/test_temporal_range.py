"""Dates and timestamps at and past the years splitstream holds (1 to 9999
AD; PostgreSQL 15 holds 4713 BC to 294276 AD, dates to 5874897 AD):
input, output, arithmetic, extract, date_trunc, comparisons, zones and
series over generated boundary values, compared with PostgreSQL 15. Each
outcome is PostgreSQL's, or, where PostgreSQL's value (or the literal's) lies
outside years 1 to 9999, PostgreSQL's own out-of-range error (22008 "date
out of range" / "timestamp out of range"): never a traceback, never another
year. COPY in and out (text and binary) of the years held agree byte for
byte, and a value past them is refused by COPY as by INSERT."""
from __future__ import annotations

import re
import struct

import psycopg

from tests.support.diff import text_cursor

LITERALS = {
    "date": ["0001-01-01", "9999-12-31", "0044-03-15 BC", "4713-11-24 BC", "12000-01-01", "5874897-12-31",
             "5874898-01-01", "0000-01-01", "infinity"],
    "timestamp": ["0001-01-01 00:00", "9999-12-31 23:59:59.999999", "0044-03-15 10:00 BC", "12000-01-01 00:00",
                  "294276-12-31 23:59:59", "294277-01-01", "9999-12-31 24:00", "-infinity"],
    "timestamptz": ["0001-01-01 00:30+00", "0001-01-01 00:30+01", "9999-12-31 23:30-01", "9999-12-31 22:00+00",
                    "0044-03-15 10:00+00 BC", "12000-01-01 00:00+00", "294277-01-01 00:00+00"],
}
OPERATIONS = {
    "date": ["{v}", "{v} + 1", "{v} - 1", "{v} + 400000", "{v} - interval '1 day'", "{v} + interval '1 year'",
             "extract(year from {v})", "extract(millennium from {v})", "date_trunc('millennium', {v})",
             "{v} < '0001-01-02'::date", "{v} - '0001-01-01'::date", "to_char({v}, 'YYYY-MM-DD')", "{v}::timestamp"],
    "timestamp": ["{v}", "{v} + interval '2 hours'", "{v} - interval '1 hour'", "{v} + interval '1 month'",
                  "extract(epoch from {v})", "extract(century from {v})", "date_trunc('day', {v})", "{v}::date",
                  "{v} AT TIME ZONE 'Asia/Tokyo'", "{v} > '9999-12-31'::timestamp"],
    "timestamptz": ["{v}", "{v} + interval '1 hour'", "{v} - interval '1 hour'", "{v}::date", "{v}::timestamp",
                    "extract(year from {v})", "date_trunc('hour', {v})", "{v} AT TIME ZONE 'America/New_York'"],
}
CALLS = ["make_date(10000, 1, 1)", "make_date(9999, 12, 31)", "make_timestamp(9999, 12, 31, 23, 59, 59.5)",
         "to_timestamp(253402300799)", "to_timestamp(253402300800)", "to_timestamp(-62135596800)",
         "to_timestamp(-62135596801)", "to_date('9999-12-31', 'YYYY-MM-DD')",
         "make_date(-44, 3, 15)", "make_date(0, 1, 1)", "make_date(10000, 2, 30)", "make_date(5874898, 1, 1)",
         "make_date(-45, 2, 29)", "make_date(-44, 2, 29)", "make_date(10000, 2, 29)", "make_date(10400, 2, 29)",
         "make_timestamp(12000, 1, 1, 0, 0, 0)", "make_timestamptz(10000, 1, 1, 0, 0, 0)",
         "(SELECT max(g) FROM generate_series('9999-12-29'::timestamp, '9999-12-31', '1 day') g)",
         "(SELECT count(*) FROM generate_series('9999-12-31 20:00'::timestamp, '9999-12-31 23:59', '1 hour'))"]
_BEYOND = re.compile(r"\bBC\b|(?<![\d.])\d{5,}-\d\d-\d\d")


def _outcome(conn: psycopg.Connection, sql: str) -> tuple:
    cur = text_cursor(conn)
    try:
        cur.execute(sql)  # type: ignore[arg-type]
        return ("ok", cur.fetchall())
    except psycopg.Error as e:
        return (e.sqlstate, e.diag.message_primary)
    finally:
        cur.close()


def _beyond(outcome: tuple) -> bool:
    return outcome[0] == "ok" and any(_BEYOND.search(str(v)) for row in outcome[1] for v in row)


def _cases():
    for typ, literals in LITERALS.items():
        for lit in literals:
            value = f"'{lit}'::{typ}"
            for op in OPERATIONS[typ]:
                yield f"SELECT {op.format(v=value)}", f"SELECT {value}"
    for call in CALLS:
        yield f"SELECT {call}", f"SELECT {call}"


def test_temporal_boundaries_agree_or_refuse(ss_conn, pg_conn):
    for conn in (ss_conn, pg_conn):
        conn.execute("SET TimeZone = 'UTC'")
    cases = list(_cases())
    bad, refused = [], 0
    for sql, literal in cases:
        ours, theirs = _outcome(ss_conn, sql), _outcome(pg_conn, sql)
        if ours == theirs:
            continue
        beyond = _beyond(theirs) or _beyond(_outcome(pg_conn, literal))
        if beyond and ours[0] == "22008" and re.fullmatch(r'(date|timestamp) out of range(: .*)?', ours[1]):
            refused += 1
            continue
        bad.append((sql, ours, theirs))
    assert not bad, "\n".join(map(str, bad[:10]))
    assert len(cases) > 150 and refused > 20


HELD = [("0001-01-01", "0001-01-01 00:00:00", "0001-01-01 00:00:00+00"),
        ("9999-12-31", "9999-12-31 23:59:59.999999", "9999-12-31 23:59:59.999999+00"),
        ("2000-02-29", "1999-12-31 23:59:59.5", "0001-01-01 12:00:00+00")]


def _copy_out(conn: psycopg.Connection, table: str, fmt: str) -> bytes:
    with conn.cursor().copy(f"COPY (SELECT * FROM {table} ORDER BY d) TO STDOUT WITH (FORMAT {fmt})") as cp:
        return b"".join(bytes(chunk) for chunk in cp)


def test_copy_of_boundary_years(ss_conn, pg_conn, unique_name):
    t = unique_name("tr")
    out: dict[str, list] = {}
    for name, conn in (("ss", ss_conn), ("pg", pg_conn)):
        conn.execute("SET TimeZone = 'UTC'")
        conn.execute(f"CREATE TABLE {t} (d date, ts timestamp, tz timestamptz)")
        try:
            with conn.cursor().copy(f"COPY {t} FROM STDIN") as cp:
                cp.write("".join("\t".join(row) + "\n" for row in HELD))
            out[name] = [_copy_out(conn, t, fmt) for fmt in ("text", "binary", "csv")]
            if name == "ss":
                for bad in ("0044-03-15 BC", "10000-01-01"):
                    try:
                        with conn.cursor().copy(f"COPY {t} (d) FROM STDIN") as cp:
                            cp.write(bad + "\n")
                        raise AssertionError(f"COPY took {bad}")
                    except psycopg.errors.DatetimeFieldOverflow as e:
                        assert e.diag.message_primary == f'date out of range: "{bad}"'
                assert conn.execute(f"SELECT count(*) FROM {t}").fetchone() == (3,)
        finally:
            conn.execute(f"DROP TABLE {t}")
            conn.execute("RESET TimeZone")
    assert out["ss"] == out["pg"]


def _binary(conn: psycopg.Connection, sql: str, oid: int, value: bytes) -> tuple:
    res = conn.pgconn.exec_params(sql.encode(), [value], [oid], [1], 1)
    if res.error_message:
        return (res.error_field(ord("C")), res.error_field(ord("M")))
    return ("ok", res.get_value(0, 0))


def test_binary_input_and_output(ss_conn, pg_conn):
    """Binary values: those held read and print as PostgreSQL's bytes; days
    or microseconds past them are 22008, never another date."""
    days = [-730119, -730120, 2921939, 2921940, -800000, 0]
    micros = [-63082281600000000, -63082281600000001, 252455615999999999, 252455616000000000]
    cases = [("SELECT $1::date", 1082, struct.pack("!i", d)) for d in days]
    cases += [(f"SELECT $1::{t}", oid, struct.pack("!q", us)) for us in micros
              for t, oid in (("timestamp", 1114), ("timestamptz", 1184))]
    refused = 0
    for sql, oid, value in cases:
        ours, theirs = _binary(ss_conn, sql, oid, value), _binary(pg_conn, sql, oid, value)
        if ours != theirs:
            assert ours[0] == b"22008" and ours[1] in (b"date out of range", b"timestamp out of range"), (sql, ours)
            refused += 1
    assert 0 < refused < len(cases)
