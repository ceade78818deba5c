"""splitstream's SQL dialect is a subclass: importing the product leaves
sqlglot's stock ``postgres`` dialect as sqlglot ships it (issue 13)."""
from __future__ import annotations

import sqlglot
from sqlglot.dialects.postgres import Postgres

import splitstream.executor.engine  # noqa: F401  (imports every parse site of the executor)
from splitstream.executor.sql.dialect import DIALECT, parse_one


def test_stock_postgres_is_unchanged() -> None:
    assert sqlglot.parse_one("SELECT now()", read="postgres").sql("postgres") == "SELECT CURRENT_TIMESTAMP"
    assert "_splitstream_patched" not in vars(Postgres.Parser)
    assert sqlglot.parse_one("SELECT date_part('year', x)", read="postgres").find(sqlglot.exp.Extract).meta == {}


def test_splitstream_dialect_reads_what_clients_send() -> None:
    assert parse_one("SELECT now()").sql(DIALECT) == "SELECT NOW()"
    assert parse_one("SELECT $1::oid[]").sql(DIALECT) == "SELECT CAST($1 AS _oid)"
    # function calls keep the name written (issue 15): no Extract, UnixToTime, Length
    call = parse_one("SELECT date_part('year', x)").find(sqlglot.exp.Anonymous)
    assert call is not None and call.name == "date_part" and len(call.expressions) == 2
    for written in ("to_timestamp(1)", "char_length(x)", "version()", "json_agg(x)", "to_char(x, 'YYYY')"):
        assert isinstance(parse_one(f"SELECT {written}").expressions[0], sqlglot.exp.Anonymous), written
