"""extra_float_digits (issue 15): float4/float8 text output, casts to text and
COPY TO follow the setting, from SET and from the startup options, byte for
byte as PostgreSQL 15 writes them."""
from __future__ import annotations

import psycopg
import pytest

VALUES = ["0.1", "1/3.0", "-2.5e-7", "123456789.123456789", "1e15", "1e16", "1e-5", "-0.0",
          "'NaN'", "'Infinity'", "'-Infinity'", "3.4028234e38", "1.17549435e-38", "2.0^60", "0.30000000000000004"]


def _raw(conn: psycopg.Connection, sql: str) -> list[tuple]:
    """Rows as the server's text (no client-side parsing of floats)."""
    cur = conn.cursor(binary=False)
    cur.execute(sql)
    return [tuple(None if v is None else str(v) for v in row) for row in cur.fetchall()]


def _queries() -> list[str]:
    out = []
    for v in VALUES:
        out.append(f"SELECT ({v})::float8::text, ({v})::float4::text")
    return out


@pytest.mark.parametrize("digits", [-15, -3, 0, 1, 2, 3])
def test_float_text_follows_extra_float_digits(digits, ss_conn, pg_conn):
    for conn in (ss_conn, pg_conn):
        conn.execute(f"SET extra_float_digits = {digits}")
    try:
        for sql in _queries():
            assert _raw(ss_conn, sql) == _raw(pg_conn, sql), sql
        # the wire's text format itself (no cast): read through COPY TO, which is text too
        sql = "COPY (SELECT x::float8, x::float4 FROM (VALUES " + \
              ", ".join(f"(({v})::float8)" for v in VALUES if "'" not in v) + ") t(x)) TO STDOUT"
        outs = []
        for conn in (ss_conn, pg_conn):
            with conn.cursor().copy(sql) as cp:
                outs.append(b"".join(bytes(b) for b in cp))
        assert outs[0] == outs[1]
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute("RESET extra_float_digits")


def test_data_rows_follow_startup_option(ss_server, pg15):
    """DataRow text (not a cast) with extra_float_digits given at connection time."""
    sql = "SELECT 0.1::float8 + 0.2::float8, (1/3.0)::float4, 1e20::float8"
    got = []
    for dsn in (ss_server.dsn, pg15.dsn):
        with psycopg.connect(dsn, options="-c extra_float_digits=0", autocommit=True) as conn:
            cur = conn.cursor()
            cur.execute(sql)
            # psycopg parses floats; read the text through the raw loader instead
            cur.adapters.register_loader("float8", psycopg.types.string.TextLoader)
            cur.adapters.register_loader("float4", psycopg.types.string.TextLoader)
            cur.execute(sql)
            got.append(cur.fetchall())
    assert got[0] == got[1]
    assert got[0] == [("0.3", "0.333333", "1e+20")]


@pytest.mark.parametrize("bad", ["4", "-16", "x"])
def test_out_of_range_is_refused_as_postgresql_does(bad, ss_conn, pg_conn):
    codes = []
    for conn in (ss_conn, pg_conn):
        with pytest.raises(psycopg.Error) as e:
            conn.execute(f"SET extra_float_digits = '{bad}'")
        codes.append((e.value.sqlstate, str(e.value).splitlines()[0]))
    assert codes[0] == codes[1]
