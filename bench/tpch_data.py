"""TPC-H at a small scale factor, for differential tests and benchmarks.

Data and query texts come from DuckDB's tpch extension (loaded by path, as
the machine is offline).  The data is exported to CSV once per process and
loaded with ``COPY ... FROM STDIN`` into any PostgreSQL-speaking server, so
splitstream and PostgreSQL see byte-identical input.

The DDL is the TPC-H specification's (fixed CHAR columns, DECIMAL(15,2)),
because PostgreSQL users run it that way and it exercises bpchar/numeric.
"""
from __future__ import annotations

import os
import re
import tempfile
from functools import lru_cache
from pathlib import Path

TABLES = ["region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem"]

DDL = {
    "region": "r_regionkey integer NOT NULL, r_name char(25) NOT NULL, r_comment varchar(152)",
    "nation": "n_nationkey integer NOT NULL, n_name char(25) NOT NULL, n_regionkey integer NOT NULL,"
              " n_comment varchar(152)",
    "part": "p_partkey integer NOT NULL, p_name varchar(55) NOT NULL, p_mfgr char(25) NOT NULL,"
            " p_brand char(10) NOT NULL, p_type varchar(25) NOT NULL, p_size integer NOT NULL,"
            " p_container char(10) NOT NULL, p_retailprice decimal(15,2) NOT NULL, p_comment varchar(23) NOT NULL",
    "supplier": "s_suppkey integer NOT NULL, s_name char(25) NOT NULL, s_address varchar(40) NOT NULL,"
                " s_nationkey integer NOT NULL, s_phone char(15) NOT NULL, s_acctbal decimal(15,2) NOT NULL,"
                " s_comment varchar(101) NOT NULL",
    "partsupp": "ps_partkey integer NOT NULL, ps_suppkey integer NOT NULL, ps_availqty integer NOT NULL,"
                " ps_supplycost decimal(15,2) NOT NULL, ps_comment varchar(199) NOT NULL",
    "customer": "c_custkey integer NOT NULL, c_name varchar(25) NOT NULL, c_address varchar(40) NOT NULL,"
                " c_nationkey integer NOT NULL, c_phone char(15) NOT NULL, c_acctbal decimal(15,2) NOT NULL,"
                " c_mktsegment char(10) NOT NULL, c_comment varchar(117) NOT NULL",
    "orders": "o_orderkey integer NOT NULL, o_custkey integer NOT NULL, o_orderstatus char(1) NOT NULL,"
              " o_totalprice decimal(15,2) NOT NULL, o_orderdate date NOT NULL, o_orderpriority char(15) NOT NULL,"
              " o_clerk char(15) NOT NULL, o_shippriority integer NOT NULL, o_comment varchar(79) NOT NULL",
    "lineitem": "l_orderkey integer NOT NULL, l_partkey integer NOT NULL, l_suppkey integer NOT NULL,"
                " l_linenumber integer NOT NULL, l_quantity decimal(15,2) NOT NULL,"
                " l_extendedprice decimal(15,2) NOT NULL, l_discount decimal(15,2) NOT NULL,"
                " l_tax decimal(15,2) NOT NULL, l_returnflag char(1) NOT NULL, l_linestatus char(1) NOT NULL,"
                " l_shipdate date NOT NULL, l_commitdate date NOT NULL, l_receiptdate date NOT NULL,"
                " l_shipinstruct char(25) NOT NULL, l_shipmode char(10) NOT NULL, l_comment varchar(44) NOT NULL",
}

PRIMARY_KEYS = {
    "region": "r_regionkey", "nation": "n_nationkey", "part": "p_partkey", "supplier": "s_suppkey",
    "partsupp": "ps_partkey, ps_suppkey", "customer": "c_custkey", "orders": "o_orderkey",
    "lineitem": "l_orderkey, l_linenumber",
}


def _duckdb_connection(sf: float):
    import duckdb
    import duckdb_extension_tpch

    ext = os.path.join(os.path.dirname(duckdb_extension_tpch.__file__), "extensions",
                       "v" + duckdb.__version__, "tpch.duckdb_extension")
    con = duckdb.connect()
    con.sql(f"LOAD '{ext}'")
    if sf:
        con.sql(f"CALL dbgen(sf={sf})")
    return con


@lru_cache(maxsize=None)
def generate(sf: float = 0.1, directory: str | None = None) -> Path:
    """Write one CSV file per table (no header); return the directory."""
    out = Path(directory or tempfile.mkdtemp(prefix=f"tpch-sf{sf}-"))
    out.mkdir(parents=True, exist_ok=True)
    if all((out / f"{t}.csv").exists() for t in TABLES):
        return out
    con = _duckdb_connection(sf)
    for t in TABLES:
        con.sql(f"COPY {t} TO '{out / (t + '.csv')}' (FORMAT csv, HEADER false)")
    con.close()
    return out


@lru_cache(maxsize=None)
def queries() -> dict[int, str]:
    """The 22 query texts, adapted only where PostgreSQL needs it."""
    con = _duckdb_connection(0)
    rows = con.sql("SELECT query_nr, query FROM tpch_queries() ORDER BY query_nr").fetchall()
    con.close()
    return {n: adapt(q) for n, q in rows}


def adapt(sql: str) -> str:
    """DuckDB's texts are standard SQL; PostgreSQL only lacks ``interval '3' month`` style
    literals with a separate unit keyword outside the quotes, which it does accept for
    plain units -- so the texts pass through unchanged apart from whitespace."""
    sql = sql.strip().rstrip(";")
    return re.sub(r"[ \t]+\n", "\n", sql)


#: Indexes PostgreSQL needs to run Q17 and Q20 in seconds rather than many
#: minutes (their correlated subqueries become index scans).  They do not
#: change any result, so the oracle may have them and splitstream not.
ORACLE_INDEXES = [
    "CREATE INDEX ON lineitem (l_partkey, l_suppkey)",
    "CREATE INDEX ON lineitem (l_orderkey)",
    "CREATE INDEX ON orders (o_custkey)",
    "CREATE INDEX ON partsupp (ps_partkey)",
]


def load(conn, sf: float = 0.1, data_dir: Path | None = None, primary_keys: bool = False,
         oracle: bool = False, schema: str | None = None) -> None:
    """Create the eight tables on ``conn`` (psycopg, autocommit) and COPY the data in.

    With ``schema`` the tables go there and the connection's search_path is
    set to it (so the unqualified query texts find them).

    ``oracle=True`` (PostgreSQL) adds primary keys, :data:`ORACLE_INDEXES` and ANALYZE.
    """
    primary_keys = primary_keys or oracle
    data_dir = data_dir or generate(sf)
    with conn.cursor() as cur:
        if schema:
            cur.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            cur.execute(f"SET search_path = {schema}")
        for t in TABLES:
            cur.execute(f"DROP TABLE IF EXISTS {t}")
            pk = f", PRIMARY KEY ({PRIMARY_KEYS[t]})" if primary_keys else ""
            cur.execute(f"CREATE TABLE {t} ({DDL[t]}{pk})")
            with cur.copy(f"COPY {t} FROM STDIN (FORMAT csv)") as cp:
                with open(data_dir / f"{t}.csv", "rb") as f:
                    while chunk := f.read(1 << 20):
                        cp.write(chunk)
        if oracle:
            for ddl in ORACLE_INDEXES:
                cur.execute(ddl)
            cur.execute("ANALYZE")
