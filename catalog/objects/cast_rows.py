"""pg_cast's rows: PostgreSQL 15's casts between the types splitstream has.

Each entry is ``oid source target castfunc castcontext castmethod`` as
PostgreSQL 15's pg_cast holds it (its catalog data, pg_cast.dat; the OIDs
genbki gave the rows): castcontext ``e`` explicit only, ``a`` also in
assignment, ``i`` also implicitly; castmethod ``f`` by the function
``castfunc``, ``b`` binary-coercible, ``i`` by I/O conversion.  castfunc is
PostgreSQL's function OID: splitstream's pg_proc lists no cast functions
(``int4(int8)`` does not bind by name here), so it joins no pg_proc row.
Casts to and from the string types by I/O conversion are, as in
PostgreSQL, not rows at all.
"""
from __future__ import annotations

from typing import NamedTuple


class CastRow(NamedTuple):
    oid: int
    source: str         # pg_type.typname
    target: str
    func: int
    context: str
    method: str


_ROWS = """
    10000 int8 int2 714 a f, 10001 int8 int4 480 a f, 10002 int8 float4 652 i f, 10003 int8 float8 482 i f,
    10004 int8 numeric 1781 i f, 10005 int2 int8 754 i f, 10006 int2 int4 313 i f, 10007 int2 float4 236 i f,
    10008 int2 float8 235 i f, 10009 int2 numeric 1782 i f, 10010 int4 int8 481 i f, 10011 int4 int2 314 a f,
    10012 int4 float4 318 i f, 10013 int4 float8 316 i f, 10014 int4 numeric 1740 i f, 10015 float4 int8 653 a f,
    10016 float4 int2 238 a f, 10017 float4 int4 319 a f, 10018 float4 float8 311 i f,
    10019 float4 numeric 1742 a f, 10020 float8 int8 483 a f, 10021 float8 int2 237 a f,
    10022 float8 int4 317 a f, 10023 float8 float4 312 a f, 10024 float8 numeric 1743 a f,
    10025 numeric int8 1779 a f, 10026 numeric int2 1783 a f, 10027 numeric int4 1744 a f,
    10028 numeric float4 1745 i f, 10029 numeric float8 1746 i f, 10034 int4 bool 2557 e f,
    10035 bool int4 2558 e f, 10037 int8 oid 1287 i f, 10038 int2 oid 313 i f, 10039 int4 oid 0 i b,
    10040 oid int8 1288 a f, 10041 oid int4 0 a b, 10042 oid regproc 0 i b, 10043 regproc oid 0 i b,
    10044 int8 regproc 1287 i f, 10045 int2 regproc 313 i f, 10046 int4 regproc 0 i b,
    10047 regproc int8 1288 a f, 10048 regproc int4 0 a b, 10074 oid regclass 0 i b, 10075 regclass oid 0 i b,
    10076 int8 regclass 1287 i f, 10077 int2 regclass 313 i f, 10078 int4 regclass 0 i b,
    10079 regclass int8 1288 a f, 10080 regclass int4 0 a b, 10088 oid regtype 0 i b, 10089 regtype oid 0 i b,
    10090 int8 regtype 1287 i f, 10091 int2 regtype 313 i f, 10092 int4 regtype 0 i b,
    10093 regtype int8 1288 a f, 10094 regtype int4 0 a b, 10109 text regclass 1079 i f,
    10110 varchar regclass 1079 i f, 10111 oid regrole 0 i b, 10112 regrole oid 0 i b,
    10113 int8 regrole 1287 i f, 10114 int2 regrole 313 i f, 10115 int4 regrole 0 i b,
    10116 regrole int8 1288 a f, 10117 regrole int4 0 a b, 10118 oid regnamespace 0 i b,
    10119 regnamespace oid 0 i b, 10120 int8 regnamespace 1287 i f, 10121 int2 regnamespace 313 i f,
    10122 int4 regnamespace 0 i b, 10123 regnamespace int8 1288 a f, 10124 regnamespace int4 0 a b,
    10125 text bpchar 0 i b, 10126 text varchar 0 i b, 10127 bpchar text 401 i f, 10128 bpchar varchar 401 i f,
    10129 varchar text 0 i b, 10130 varchar bpchar 0 i b, 10131 char text 946 i f, 10132 char bpchar 860 a f,
    10133 char varchar 946 a f, 10134 name text 406 i f, 10135 name bpchar 408 a f, 10136 name varchar 1401 a f,
    10137 text char 944 a f, 10138 bpchar char 944 a f, 10139 varchar char 944 a f, 10140 text name 407 i f,
    10141 bpchar name 409 i f, 10142 varchar name 1400 i f, 10143 char int4 77 e f, 10144 int4 char 78 e f,
    10152 date timestamp 2024 i f, 10153 date timestamptz 1174 i f, 10154 time interval 1370 i f,
    10155 time timetz 2047 i f, 10156 timestamp date 2029 a f, 10157 timestamp time 1316 a f,
    10158 timestamp timestamptz 2028 i f, 10159 timestamptz date 1178 a f, 10160 timestamptz time 2019 a f,
    10161 timestamptz timestamp 2027 a f, 10162 timestamptz timetz 1388 a f, 10163 interval time 1419 a f,
    10164 timetz time 2046 a f, 10191 bool text 2971 a f, 10196 bool varchar 2971 a f, 10201 bool bpchar 2971 a f,
    10204 bpchar bpchar 668 i f, 10205 varchar varchar 669 i f, 10206 time time 1968 i f,
    10207 timestamp timestamp 1961 i f, 10208 timestamptz timestamptz 1967 i f, 10209 interval interval 1200 i f,
    10210 timetz timetz 1969 i f, 10213 numeric numeric 1703 i f, 10214 json jsonb 0 a i, 10215 jsonb json 0 a i,
    10216 jsonb bool 3556 e f, 10217 jsonb numeric 3449 e f, 10218 jsonb int2 3450 e f, 10219 jsonb int4 3451 e f,
    10220 jsonb int8 3452 e f, 10221 jsonb float4 3453 e f, 10222 jsonb float8 2580 e f
"""

#: the types the rows were taken for (both ends of a cast among them): between two of
#: these, a cast PostgreSQL 15 has is a row here or an I/O conversion to or from a string type
COVERED = frozenset((
    "bool", "bytea", "char", "name", "int8", "int2", "int2vector", "int4", "regproc", "text", "oid", "xid",
    "oidvector", "json", "float4", "float8", "bpchar", "varchar", "date", "time", "timestamp", "timestamptz",
    "interval", "timetz", "numeric", "regclass", "regtype", "uuid", "jsonb", "regnamespace", "regrole",
))

CASTS: tuple[CastRow, ...] = tuple(
    CastRow(int(o), s, t, int(f), c, m)
    for o, s, t, f, c, m in (item.split() for item in _ROWS.replace("\n", " ").split(",") if item.strip()))
