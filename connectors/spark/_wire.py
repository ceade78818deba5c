"""Connection strings and COPY encodings used on Spark executors.

Nothing here imports pyspark: these functions run inside Python workers on
pyarrow record batches.
"""
from __future__ import annotations

import datetime as _dt
import io
import re
import struct
from urllib.parse import parse_qsl, quote, urlsplit

import numpy as np

_PG_EPOCH_US = 946_684_800_000_000          # 2000-01-01 in Unix microseconds
_PG_EPOCH_DAYS = 10_957


def conninfo(url: str, properties: dict | None = None) -> str:
    """``jdbc:postgresql://h:p/db?user=..``, ``postgresql://..`` or a libpq
    keyword string -> a libpq connection string psycopg accepts."""
    props = dict(properties or {})
    u = url.strip()
    if u.startswith("jdbc:"):
        u = u[5:]
    if u.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(u)
        q = dict(parse_qsl(parts.query))
        q.update({k: v for k, v in props.items() if k in ("user", "password", "sslmode", "application_name")})
        keep = {k: v for k, v in q.items() if k in ("user", "password", "sslmode", "application_name", "connect_timeout")}
        netloc = parts.netloc
        if "@" not in netloc and "user" in keep:
            auth = quote(keep.pop("user"), safe="")
            if "password" in keep:
                auth += ":" + quote(keep.pop("password"), safe="")
            netloc = auth + "@" + netloc
        query = "&".join(f"{k}={quote(str(v), safe='')}" for k, v in keep.items())
        return f"postgresql://{netloc}{parts.path or '/postgres'}" + (f"?{query}" if query else "")
    extra = " ".join(f"{k}={v}" for k, v in props.items() if k in ("user", "password") and f"{k}=" not in u)
    return (u + " " + extra).strip()


def _q1(p: str) -> str:
    if p.startswith('"') or re.fullmatch(r"[a-z_][a-z0-9_]*", p):
        return p
    return '"' + p.replace('"', '""') + '"'


def qident(name: str) -> str:
    """Quote a possibly schema-qualified relation (or column) name for SQL,
    only where needed (``public.`` is dropped)."""
    parts = name.split(".") if not name.startswith('"') else [name]
    if len(parts) == 2 and parts[0] == "public":
        parts = parts[1:]
    return ".".join(_q1(p) for p in parts)


# ------------------------------------------------------------------ CSV

def csv_bytes(table) -> bytes:
    import pyarrow.csv as pacsv  # optional dependency

    buf = io.BytesIO()
    pacsv.write_csv(table, buf, pacsv.WriteOptions(include_header=False, quoting_style="needed"))
    return buf.getvalue()


# ------------------------------------------------------------------ binary

_FIXED = {
    "int16": (">i2", 2), "int32": (">i4", 4), "int64": (">i8", 8),
    "float": (">f4", 4), "double": (">f8", 8), "bool": ("u1", 1),
}


def binary_supported(table) -> bool:
    import pyarrow as pa  # optional dependency

    for f in table.schema:
        t = f.type
        if str(t) in _FIXED or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_date32(t):
            continue
        if pa.types.is_timestamp(t) and t.tz is not None:
            continue
        return False
    return True


def _column_fields(arr):
    """(per-row payload lengths, null mask, writer(buf, starts, valid))."""
    import pyarrow as pa  # optional dependency

    arr = arr.combine_chunks() if hasattr(arr, "combine_chunks") else arr
    n = len(arr)
    nulls = np.asarray(arr.is_null()) if arr.null_count else np.zeros(n, bool)
    t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if pa.types.is_string(t):
            arr = arr.cast(pa.large_string())
        bufs = arr.buffers()
        offs = np.frombuffer(bufs[1], dtype=np.int64, count=n + 1, offset=arr.offset * 8)
        data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
        lens = (offs[1:] - offs[:-1]).astype(np.int64)
        lens[nulls] = 0

        def write(buf, starts, valid):
            ln = lens[valid]
            total = int(ln.sum())
            if not total:
                return
            src0 = offs[:-1][valid]
            rep_dst = np.repeat(starts[valid], ln)
            rep_src = np.repeat(src0, ln)
            within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(ln) - ln, ln)
            buf[rep_dst + within] = data[rep_src + within]

        return lens, nulls, write
    if pa.types.is_timestamp(t):
        unit = {"s": 1_000_000, "ms": 1000, "us": 1, "ns": None}[t.unit]
        raw = np.asarray(arr.cast(pa.int64()).fill_null(0))
        vals = (raw // 1000 if unit is None else raw * unit) - _PG_EPOCH_US
        be, w = ">i8", 8
    elif pa.types.is_date32(t):
        vals = np.asarray(arr.cast(pa.int32()).fill_null(0)) - _PG_EPOCH_DAYS
        be, w = ">i4", 4
    else:
        be, w = _FIXED[str(t)]
        vals = np.asarray(arr.fill_null(False if str(t) == "bool" else 0))
    raw_bytes = vals.astype(be).view(np.uint8).reshape(n, w)
    lens = np.where(nulls, 0, w).astype(np.int64)

    def write(buf, starts, valid):
        if valid.any():
            buf[starts[valid][:, None] + np.arange(w)] = raw_bytes[valid]

    return lens, nulls, write


def _fixed_fast(table):
    """All columns fixed-width without NULLs: one structured array, no scatter."""
    import pyarrow as pa  # optional dependency

    fields = [("n", ">i2")]
    values = []
    for i, f in enumerate(table.schema):
        col = table.column(i)
        if col.null_count:
            return None
        t = f.type
        if pa.types.is_timestamp(t) and t.tz is not None:
            unit = {"s": 1_000_000, "ms": 1000, "us": 1, "ns": None}[t.unit]
            raw = np.asarray(col.combine_chunks().cast(pa.int64()))
            v, be = (raw // 1000 if unit is None else raw * unit) - _PG_EPOCH_US, ">i8"
        elif pa.types.is_date32(t):
            v, be = np.asarray(col.combine_chunks().cast(pa.int32())) - _PG_EPOCH_DAYS, ">i4"
        elif str(t) in _FIXED:
            v, be = np.asarray(col.combine_chunks()), _FIXED[str(t)][0]
        else:
            return None
        fields += [(f"l{i}", ">i4"), (f"v{i}", be)]
        values.append((i, v, np.dtype(be).itemsize))
    out = np.empty(table.num_rows, dtype=np.dtype(fields))
    out["n"] = table.num_columns
    for i, v, w in values:
        out[f"l{i}"] = w
        out[f"v{i}"] = v
    return out.tobytes()


def binary_bytes(table, header: bool, trailer: bool) -> bytes:
    """PostgreSQL binary COPY for a pyarrow table, built with numpy."""
    fast = _fixed_fast(table)
    if fast is not None:
        return (b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0) if header else b"") + fast + \
            (struct.pack(">h", -1) if trailer else b"")
    n = table.num_rows
    ncols = table.num_columns
    cols = [_column_fields(table.column(i)) for i in range(ncols)]
    row_len = np.full(n, 2, dtype=np.int64)
    for lens, _nulls, _w in cols:
        row_len += 4 + lens
    starts = np.zeros(n, dtype=np.int64)
    if n:
        starts[1:] = np.cumsum(row_len)[:-1]
    total = int(row_len.sum())
    buf = np.empty(total, dtype=np.uint8)
    hdr = np.frombuffer(struct.pack(">h", ncols), np.uint8)
    if n:
        buf[starts[:, None] + np.arange(2)] = hdr
    pos = starts + 2
    for lens, nulls, write in cols:
        lfield = np.where(nulls, -1, lens).astype(">i4").view(np.uint8).reshape(n, 4)
        if n:
            buf[pos[:, None] + np.arange(4)] = lfield
        write(buf, pos + 4, ~nulls)
        pos = pos + 4 + lens
    out = buf.tobytes()
    if header:
        out = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0) + out
    if trailer:
        out += struct.pack(">h", -1)
    return out


def safe_name(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", s)


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat()
