"""pg_cast's rows: PostgreSQL 15's casts between the types splitstream has.

Each entry is ``oid source target castfunc castcontext castmethod`` as
PostgreSQL 15's pg_cast holds it (its catalog data, pg_cast.dat; the OIDs
genbki gave the rows): castcontext ``e`` explicit only, ``a`` also in
assignment, ``i`` also implicitly; castmethod ``f`` by the function
``castfunc``, ``b`` binary-coercible, ``i`` by I/O conversion.  castfunc is
PostgreSQL's function OID, and pg_proc lists those functions
(:data:`FUNCTIONS`, PostgreSQL's rows; a call ``int4(x)`` binds as the
cast, as PostgreSQL's function-style casts do).
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

class CastFunction(NamedTuple):
    """A pg_proc row of a cast function (one argument; the length-coercion
    functions of a type to itself are not listed)."""

    oid: int
    name: str
    arg: str            # pg_type.typname
    result: str
    volatile: str       # provolatile


_FUNCTIONS = """
    77 int4 char int4 i, 78 char int4 char i, 235 float8 int2 float8 i, 236 float4 int2 float4 i,
    237 int2 float8 int2 i, 238 int2 float4 int2 i, 311 float8 float4 float8 i, 312 float4 float8 float4 i,
    313 int4 int2 int4 i, 314 int2 int4 int2 i, 316 float8 int4 float8 i, 317 int4 float8 int4 i,
    318 float4 int4 float4 i, 319 int4 float4 int4 i, 401 text bpchar text i, 406 text name text i,
    407 name text name i, 408 bpchar name bpchar i, 409 name bpchar name i, 480 int4 int8 int4 i,
    481 int8 int4 int8 i, 482 float8 int8 float8 i, 483 int8 float8 int8 i, 652 float4 int8 float4 i,
    653 int8 float4 int8 i, 714 int2 int8 int2 i, 754 int8 int2 int8 i, 860 bpchar char bpchar i,
    944 char text char i, 946 text char text i, 1079 regclass text regclass s,
    1174 timestamptz date timestamptz s, 1178 date timestamptz date s, 1287 oid int8 oid i,
    1288 int8 oid int8 i, 1316 time timestamp time i, 1370 interval time interval i,
    1388 timetz timestamptz timetz s, 1400 name varchar name i, 1401 varchar name varchar i,
    1419 time interval time i, 1740 numeric int4 numeric i, 1742 numeric float4 numeric i,
    1743 numeric float8 numeric i, 1744 int4 numeric int4 i, 1745 float4 numeric float4 i,
    1746 float8 numeric float8 i, 1779 int8 numeric int8 i, 1781 numeric int8 numeric i,
    1782 numeric int2 numeric i, 1783 int2 numeric int2 i, 2019 time timestamptz time s,
    2024 timestamp date timestamp i, 2027 timestamp timestamptz timestamp s,
    2028 timestamptz timestamp timestamptz s, 2029 date timestamp date i, 2046 time timetz time i,
    2047 timetz time timetz s, 2557 bool int4 bool i, 2558 int4 bool int4 i, 2580 float8 jsonb float8 i,
    2971 text bool text i, 3449 numeric jsonb numeric i, 3450 int2 jsonb int2 i, 3451 int4 jsonb int4 i,
    3452 int8 jsonb int8 i, 3453 float4 jsonb float4 i, 3556 bool jsonb bool i
"""

FUNCTIONS: tuple[CastFunction, ...] = tuple(
    CastFunction(int(o), n, a, r, v)
    for o, n, a, r, v in (item.split() for item in _FUNCTIONS.replace("\n", " ").split(",") if item.strip()))

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
