"""Tests for protocol.types, differential against a real PostgreSQL 15 where possible."""
from __future__ import annotations

import datetime as dt
import random
import uuid
from decimal import Decimal

import numpy as np
import pytest

from splitstream.protocol import types as wiretypes
from splitstream.protocol.errors import PgError
from tests.support.servers import Postgres15, postgres15_available

needs_pg = pytest.mark.skipif(not postgres15_available(), reason="PostgreSQL 15 not available")


@pytest.fixture(scope="module")
def pg():
    psycopg = pytest.importorskip("psycopg")
    with Postgres15() as server:
        conn = psycopg.connect(server.dsn, autocommit=True)
        yield conn
        conn.close()


# (input literal, type name) pairs: tricky values for text and binary output.
CASES: list[tuple[str, str]] = [
    ("t", "bool"), (" FALSE ", "bool"), ("yes", "bool"), ("0", "bool"),
    ("-32768", "int2"), ("32767", "int2"), (" -2147483648 ", "int4"), ("+17", "int4"),
    ("9223372036854775807", "int8"), ("-9223372036854775808", "int8"),
    ("1.5", "float8"), ("1e20", "float8"), ("1e15", "float8"), ("123456789012345.6", "float8"),
    ("100", "float8"), ("1e-5", "float8"), ("0.0001", "float8"), ("-0", "float8"), ("0.1", "float8"),
    ("NaN", "float8"), ("-Infinity", "float8"), ("inf", "float8"), ("1.7976931348623157e308", "float8"),
    ("5e-324", "float8"), ("2.5e-310", "float8"), ("1234567", "float4"), ("123456", "float4"),
    ("3.4e38", "float4"), ("0.1", "float4"), ("1.17549435e-38", "float4"), ("nan", "float4"),
    ("1.50", "numeric"), ("-0.00", "numeric"), ("1e3", "numeric"), ("NaN", "numeric"),
    ("123456789012345678901234567890.123456789", "numeric"), ("0.0000001", "numeric"),
    ("-12345.6789", "numeric"), ("10000", "numeric"), ("0", "numeric"), ("1.500e2", "numeric"),
    ("Infinity", "numeric"), ("-Infinity", "numeric"),
    ("hello", "text"), ("", "text"), ("a\tb\nc\\d \"q\" é 😀", "text"), ("abc", "varchar"),
    ("x", "bpchar"), ("pg_class", "name"), ("q", "\"char\""),
    ("\\x0001ff", "bytea"), ("abc\\\\def", "bytea"), ("\\001\\377", "bytea"), ("\\x", "bytea"),
    ("2024-01-02", "date"), ("0001-01-01", "date"), ("9999-12-31", "date"), ("1/2/2024", "date"),
    ("infinity", "date"), ("-infinity", "date"), ("20240102", "date"),
    ("03:04:05", "time"), ("23:59:59.999999", "time"), ("00:00", "time"), ("12:00:00.5", "time"),
    ("2024-01-02 03:04:05", "timestamp"), ("2024-01-02T03:04:05.123456", "timestamp"),
    ("2024-01-02 03:04:05+05", "timestamp"), ("1999-12-31 23:59:59.5", "timestamp"),
    ("2024-01-02 03:04:05.1234565", "timestamp"), ("infinity", "timestamp"),
    ("2024-01-02 03:04:05.123+05:30", "timestamptz"), ("2024-01-02 03:04:05", "timestamptz"),
    ("2024-01-02T03:04:05Z", "timestamptz"), ("1900-06-01 00:00:00-03:30", "timestamptz"),
    ("-infinity", "timestamptz"), ("2024-07-01 12:00 Europe/Berlin", "timestamptz"),
    ("1 year 2 mons 3 days 04:05:06.5", "interval"), ("-1 second", "interval"), ("0", "interval"),
    ("-1 year 2 mons", "interval"), ("1 mon -1 day", "interval"), ("-1 day +1 hour", "interval"),
    ("1.5 days", "interval"), ("1.5 months", "interval"), ("1.5 years", "interval"),
    ("P1Y2M3DT4H5M6.5S", "interval"), ("@ 1 day ago", "interval"), ("100 hours", "interval"),
    ("1 day -00:00:01", "interval"), ("5", "interval"), ("01:02", "interval"), ("2 weeks", "interval"),
    ("-01:02:03", "interval"), ("3 milliseconds", "interval"), ("-1.5 hours", "interval"),
    ("1 decade", "interval"), ("1 day 2:03", "interval"), ("-2 years -3 mons", "interval"),
    ("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "uuid"), ("{A0EEBC999C0B4EF8BB6D6BB9BD380A11}", "uuid"),
    ('{"b": 1, "a": [1, 2]}', "json"), ('{"b":1,"a":[1.0,2e2,"x\\u0001\\n"],"aa":null,"b":true}', "jsonb"),
    ('[1, "x", {"é": false}]', "jsonb"), ('"str"', "jsonb"), ("1.50", "jsonb"), ("{}", "jsonb"),
    ("{1,2,NULL}", "int4[]"), ("{{1,2},{3,4}}", "int8[]"), ("{}", "text[]"),
    ('{"a b","x\\"y",NULL,"","null",\\\\,é,"{}"}', "text[]"), ('{"\\\\x01",NULL}', "bytea[]"),
    ("{1.5,NaN,-Infinity}", "float8[]"), ("{t,f}", "bool[]"), ("{2024-01-02,NULL}", "date[]"),
    ('{"2024-01-02 03:04:05+00"}', "timestamptz[]"), ('{"1 day","-00:00:01"}', "interval[]"),
    ("{1.50,0}", "numeric[]"), ("[1:2]={1,2}", "int4[]"), ("{ a , b }", "varchar[]"),
    ('{"{\\"a\\": 1}"}', "jsonb[]"), ("{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}", "uuid[]"),
    ("1 2 3", "int2vector"), ("23 25", "oidvector"), ("1259", "oid"), ("4294967295", "oid"),
]


def same(a, b) -> bool:
    """Equality where NaN equals NaN (floats and Decimals, inside lists too)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, (float, Decimal)) and isinstance(b, (float, Decimal)) and a != a and b != b:
        return True
    return a == b and type(a) is type(b)


def _oid(typ: str) -> int:
    return wiretypes.type_by_name(typ).oid


def _raw(pg, literal: str, typ: str, binary: bool = False):
    """PostgreSQL's own output bytes (typoutput/typsend) for literal::typ."""
    from psycopg.adapt import Loader
    from psycopg.pq import Format

    class Raw(Loader):
        format = Format.BINARY if binary else Format.TEXT

        def load(self, data):  # type: ignore[override]
            return bytes(data)

    with pg.cursor(binary=binary) as cur:
        cur.adapters.register_loader(_oid(typ), Raw)
        cur.execute(f"select %s::{typ}", (literal,))
        return cur.fetchone()[0]


@needs_pg
@pytest.mark.parametrize("literal,typ", CASES)
def test_text_roundtrip_matches_postgres(pg, literal: str, typ: str) -> None:
    expected = _raw(pg, literal, typ).decode()
    oid = _oid(typ)
    value = wiretypes.decode_text(oid, literal)
    assert wiretypes.encode_text(oid, value).decode() == expected
    # and our output parses back to the same value
    assert same(wiretypes.decode_text(oid, expected), value)


@needs_pg
@pytest.mark.parametrize("literal,typ", [c for c in CASES if c[1] not in ("\"char\"",)])
def test_binary_matches_postgres(pg, literal: str, typ: str) -> None:
    oid = _oid(typ)
    pg_bytes = _raw(pg, literal, typ, binary=True)
    value = wiretypes.decode_text(oid, literal)
    ours = wiretypes.encode_binary(oid, value)
    decoded = wiretypes.decode_binary(oid, pg_bytes)
    assert same(decoded, value)
    assert ours == pg_bytes
    assert same(wiretypes.decode_binary(oid, ours), decoded)


ERRORS: list[tuple[str, str, str, str]] = [
    ("abc", "int4", "22P02", 'invalid input syntax for type integer: "abc"'),
    ("", "int4", "22P02", 'invalid input syntax for type integer: ""'),
    ("99999", "int2", "22003", 'value "99999" is out of range for type smallint'),
    ("99999999999", "int4", "22003", 'value "99999999999" is out of range for type integer'),
    ("1e400", "float8", "22003", '"1e400" is out of range for type double precision'),
    ("1e-400", "float8", "22003", '"1e-400" is out of range for type double precision'),
    ("x", "float4", "22P02", 'invalid input syntax for type real: "x"'),
    ("1e39", "float4", "22003", '"1e39" is out of range for type real'),
    ("x", "numeric", "22P02", 'invalid input syntax for type numeric: "x"'),
    ("x", "bool", "22P02", 'invalid input syntax for type boolean: "x"'),
    ("abc", "date", "22007", 'invalid input syntax for type date: "abc"'),
    ("2024-13-01", "date", "22008", 'date/time field value out of range: "2024-13-01"'),
    ("x", "timestamp", "22007", 'invalid input syntax for type timestamp: "x"'),
    ("x", "timestamptz", "22007", 'invalid input syntax for type timestamp with time zone: "x"'),
    ("x", "interval", "22007", 'invalid input syntax for type interval: "x"'),
    ("x", "time", "22007", 'invalid input syntax for type time: "x"'),
    ("x", "uuid", "22P02", 'invalid input syntax for type uuid: "x"'),
    ("{1", "int4[]", "22P02", 'malformed array literal: "{1"'),
    ("{x}", "json", "22P02", "invalid input syntax for type json"),
    ("\\xzz", "bytea", "22023", 'invalid hexadecimal digit: "z"'),
    ("x", "oid", "22P02", 'invalid input syntax for type oid: "x"'),
    ("{1,x}", "int4[]", "22P02", 'invalid input syntax for type integer: "x"'),
]


@pytest.mark.parametrize("literal,typ,code,message", ERRORS)
def test_input_errors(literal: str, typ: str, code: str, message: str) -> None:
    with pytest.raises(PgError) as ei:
        wiretypes.decode_text(_oid(typ), literal)
    assert (ei.value.sqlstate, ei.value.message) == (code, message)


@needs_pg
@pytest.mark.parametrize("literal,typ,code,message", ERRORS)
def test_input_errors_match_postgres(pg, literal: str, typ: str, code: str, message: str) -> None:
    import psycopg

    if typ == "time":
        message = message.replace("type time:", "type time:")
    with pytest.raises(psycopg.Error) as ei:
        pg.execute(f"select %s::{typ}", (literal,))
    assert ei.value.sqlstate == code
    assert ei.value.diag.message_primary == message


@needs_pg
def test_random_floats_match_postgres(pg) -> None:
    rng = random.Random(42)
    vals = [rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30) for _ in range(300)]
    vals += [float(10 ** e) for e in range(-8, 22)] + [1.5 * 10 ** e for e in range(-8, 22)]
    got8 = pg.execute("select array_agg(x::text order by i), array_agg(x::float4::text order by i) "
                      "from unnest(%s::float8[]) with ordinality t(x, i)", (vals,)).fetchone()
    assert [wiretypes.format_float(v) for v in vals] == got8[0]
    assert [wiretypes.format_float(float(np.float32(v)), True) for v in vals] == got8[1]
    col8 = wiretypes.encode_text_column(wiretypes.FLOAT8, np.array(vals))
    assert [b.decode() for b in col8] == got8[0]
    col4 = wiretypes.encode_text_column(wiretypes.FLOAT4, np.array(vals, dtype=np.float32))
    assert [b.decode() for b in col4] == got8[1]


@needs_pg
def test_timestamptz_output_in_other_zones(pg) -> None:
    for zone in ("Asia/Kolkata", "America/New_York", "Europe/Berlin"):
        pg.execute(f"set timezone = '{zone}'")
        for lit in ("2024-01-02 03:04:05.5+00", "1900-01-01 00:00:00+00", "2024-07-01 12:00:00+00"):
            expected = pg.execute("select %s::timestamptz::text", (lit,)).fetchone()[0]
            v = wiretypes.decode_text(wiretypes.TIMESTAMPTZ, lit)
            assert wiretypes.encode_text(wiretypes.TIMESTAMPTZ, v, tz=zone).decode() == expected
            assert wiretypes.decode_text(wiretypes.TIMESTAMPTZ, expected) == v
        naive = "2024-03-10 12:00:00"
        expected = pg.execute("select %s::timestamptz::text", (naive,)).fetchone()[0]
        assert wiretypes.encode_text(wiretypes.TIMESTAMPTZ, wiretypes.decode_text(wiretypes.TIMESTAMPTZ, naive, tz=zone), tz=zone).decode() == expected
    pg.execute("set timezone = 'UTC'")


@needs_pg
def test_type_table_matches_catalog(pg) -> None:
    rows = pg.execute("select oid::int, typname::text, typlen::int, typarray::int, typelem::int, "
                      "typcategory::text, format_type(oid, null) from pg_type where oid = any(%s)",
                      (list(wiretypes.TYPES_BY_OID),)).fetchall()
    assert len(rows) == len(wiretypes.TYPES_BY_OID)
    for oid, name, typlen, arr, elem, cat, sql in rows:
        t = wiretypes.TYPES_BY_OID[oid]
        assert (t.name, t.typlen, t.array_oid, t.category, t.sql_name) == (name, typlen, arr, cat, sql)
        if cat == "A":
            assert t.elem_oid == elem


def test_type_by_name_aliases() -> None:
    cases = {
        "int": 23, "INTEGER": 23, "int4": 23, "smallint": 21, "bigint": 20, "real": 700,
        "double precision": 701, "float": 701, "Decimal": 1700, "numeric(10,2)": 1700,
        "varchar(20)": 1043, "character varying": 1043, "char": 1042, "character(3)": 1042,
        "bpchar": 1042, '"char"': 18, "boolean": 16, "time without time zone": 1083,
        "timestamp": 1114, "timestamp(3) with time zone": 1184, "timestamptz": 1184,
        "int4[]": 1007, "_int4": 1007, "integer[]": 1007, "text[][]": 1009, "regclass": 2205,
        "jsonb": 3802, "oidvector": 30, "int2vector": 22, "xid": 28, "uuid[]": 2951, "_char": 1002,
    }
    for name, oid in cases.items():
        assert wiretypes.type_by_name(name).oid == oid, name
    with pytest.raises(PgError) as ei:
        wiretypes.type_by_name("nosuchtype")
    assert ei.value.sqlstate == "42704"


def test_interval_semantics() -> None:
    a = wiretypes.Interval(1, 0, 0)
    b = wiretypes.Interval(0, 30, 0)
    c = wiretypes.Interval(0, 0, 30 * wiretypes.USECS_PER_DAY)
    assert a == b == c and hash(a) == hash(b) == hash(c)
    assert wiretypes.Interval(0, 1, 0) > wiretypes.Interval(0, 0, 86_399_999_999)
    assert len({a, b, c}) == 1
    assert str(wiretypes.Interval(14, 3, 14_706_500_000)) == "1 year 2 mons 3 days 04:05:06.5"
    assert -wiretypes.Interval(1, 2, 3) == wiretypes.Interval(-1, -2, -3)


def test_value_contract_types() -> None:
    assert isinstance(wiretypes.decode_text(wiretypes.NUMERIC, "1.50"), Decimal)
    assert wiretypes.decode_text(wiretypes.TIMESTAMPTZ, "2024-01-02 03:04:05+01").tzinfo is not None
    assert wiretypes.decode_text(wiretypes.TIMESTAMP, "2024-01-02 03:04:05").tzinfo is None
    assert isinstance(wiretypes.decode_text(wiretypes.UUID, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), uuid.UUID)
    assert wiretypes.decode_text(wiretypes.JSONB, '{"b":1,"a":2,"a":3}') == '{"a": 3, "b": 1}'
    assert wiretypes.decode_text(1007, "{1,NULL}") == [1, None]
    assert wiretypes.decode_text(wiretypes.BYTEA, b"\\x0102") == b"\x01\x02"


def test_bool_inputs() -> None:
    for s in ("t", "TRUE", " yes ", "on", "1", "Tr", "y"):
        assert wiretypes.decode_text(wiretypes.BOOL, s) is True
    for s in ("f", "False", "no", "OFF", "0", "n", "of"):
        assert wiretypes.decode_text(wiretypes.BOOL, s) is False
    with pytest.raises(PgError):
        wiretypes.decode_text(wiretypes.BOOL, "o")


def test_binary_errors() -> None:
    with pytest.raises(PgError) as ei:
        wiretypes.decode_binary(wiretypes.INT4, b"\x00\x01")
    assert ei.value.sqlstate == "22P03"
    with pytest.raises(PgError) as ei:
        wiretypes.decode_binary(wiretypes.NUMERIC, b"\x00\x01\x00\x00\x00\x00\x00\x00\x27\x10")
    assert ei.value.sqlstate == "22P03"
    with pytest.raises(PgError) as ei:
        wiretypes.decode_binary(1007, b"\x00\x00\x00\x01")
    assert ei.value.sqlstate == "22P03"


def test_numpy_columns() -> None:
    assert wiretypes.numpy_dtype(wiretypes.INT4) == np.int32
    assert wiretypes.numpy_dtype(wiretypes.OID) == np.int64
    assert wiretypes.numpy_dtype(wiretypes.TIMESTAMPTZ) == np.dtype("datetime64[us]")
    assert wiretypes.numpy_dtype(wiretypes.TEXT) == np.dtype(object)
    vals = np.array([1, -2, 300], dtype=np.int16)
    assert wiretypes.encode_text_column(wiretypes.INT2, vals, np.array([False, True, False])) == [b"1", None, b"300"]
    assert wiretypes.encode_text_column(wiretypes.BOOL, np.array([True, False])) == [b"t", b"f"]
    ts = np.array(["2024-01-02T03:04:05.120", "1999-12-31T23:59:59"], dtype="datetime64[us]")
    assert wiretypes.encode_text_column(wiretypes.TIMESTAMP, ts) == [b"2024-01-02 03:04:05.12", b"1999-12-31 23:59:59"]
    assert wiretypes.encode_text_column(wiretypes.TIMESTAMPTZ, ts, tz="Asia/Kolkata")[0] == b"2024-01-02 08:34:05.12+05:30"
    d = np.array(["2024-01-02", "0001-01-01"], dtype="datetime64[D]")
    assert wiretypes.encode_text_column(wiretypes.DATE, d) == [b"2024-01-02", b"0001-01-01"]
    obj = np.array([wiretypes.Interval(0, 1, 0), None], dtype=object)
    assert wiretypes.encode_text_column(wiretypes.INTERVAL, obj, np.array([False, True])) == [b"1 day", None]
    col, nulls = wiretypes.pylist_to_column(wiretypes.DATE, [dt.date(2024, 1, 2), None])
    assert col.dtype == np.dtype("datetime64[D]") and nulls.tolist() == [False, True]
    assert wiretypes.column_to_pylist(wiretypes.DATE, col, nulls) == [dt.date(2024, 1, 2), None]
    col, nulls = wiretypes.pylist_to_column(wiretypes.TIMESTAMPTZ, [dt.datetime(2024, 1, 2, tzinfo=dt.timezone.utc)])
    assert wiretypes.column_to_pylist(wiretypes.TIMESTAMPTZ, col, nulls)[0] == dt.datetime(2024, 1, 2, tzinfo=dt.timezone.utc)


@needs_pg
@pytest.mark.parametrize("literal", ["[0:1]={1,2}", "[-1:0][1:1]={{1},{2}}"])
def test_lower_bounds_other_than_1_refused_in_text_and_binary(pg, literal: str) -> None:
    """PostgreSQL keeps them; arrays here all start at 1, so both inputs
    refuse them (0A000) rather than drop them."""
    oid = _oid("int4[]")
    for decode, data in ((wiretypes.decode_text, literal), (wiretypes.decode_binary, _raw(pg, literal, "int4[]", binary=True))):
        with pytest.raises(PgError) as e:
            decode(oid, data)
        assert e.value.sqlstate == "0A000" and e.value.hint
