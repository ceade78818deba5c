"""The bulk date/timestamp readers of COPY decide nothing on their own: the
compiled reader (executor/backends/llvm/csv_temporal.py) and the numpy reader
(protocol/copy_temporal.py) give exactly the columns of the exact per-value
path for whatever they accept, and decline the rest.  (The exact path is
compared with PostgreSQL 15 in tests/clients/test_copy_pg15.py.)"""
from __future__ import annotations

import random

import numpy as np
import pytest

from splitstream.executor.backends.llvm import csv as csv_kernels
from splitstream.protocol import copy as copyformat
from splitstream.protocol import copy_temporal
from splitstream.protocol import types as wiretypes
from splitstream.protocol.errors import PgError
from tests.support import event_times

CSV = copyformat.parse_copy_options({"format": "csv"})
OIDS = [wiretypes.INT4, wiretypes.TIMESTAMPTZ, wiretypes.TIMESTAMP, wiretypes.DATE]
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"]


def _exact(data: bytes, tz: str):
    """The per-value path: PostgreSQL's input functions one value at a time."""
    names = ["id", "tz", "ts", "d"]
    rows, lines = copyformat._python_rows(data, CSV, 1, names)
    return copyformat._rows_to_columns(rows, OIDS, names, lines, tz)


def _same(got, ref) -> None:
    for (a, am), (b, bm) in zip(got, ref):
        an = np.zeros(len(a), bool) if am is None else am
        bn = np.zeros(len(b), bool) if bm is None else bm
        assert np.array_equal(an, bn)
        assert a.dtype == b.dtype
        assert np.array_equal(a[~an], b[~bn])


def _stamp(rng: random.Random, strict: bool) -> str:
    y = rng.choice([rng.randint(1, 9999), 2024, 1970, 1, 9999, 2000])
    mo, d = rng.randint(1, 12), rng.randint(1, 31 if not strict else 28)
    h, mi, s = rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)
    text = f"{y:04d}-{mo:02d}-{d:02d}{rng.choice(' T')}{h:02d}:{mi:02d}:{s:02d}"
    text += rng.choice(["", f".{rng.randint(0, 9)}", f".{rng.randint(0, 999999):06d}", f".{rng.randint(0, 9999):04d}"])
    if not strict and rng.random() < 0.3:
        text = rng.choice([text, text[:16], text[:10], text + "0000000"[: rng.randint(1, 3)], " " + text,
                           text.replace("-", "/"), "infinity", "epoch", text[:11] + "24:00:00", text[:17] + "60"])
    return text


def _zone(rng: random.Random, strict: bool = False) -> str:
    if strict:
        return rng.choice(["", "Z", "+00", f"-{rng.randint(0, 15):02d}", f"+{rng.randint(0, 14):02d}:{rng.randint(0, 59):02d}"])
    return rng.choice(["", "", "", "Z", "+00", "+00", "-05", f"-{rng.randint(0, 15):02d}", f"+{rng.randint(0, 14):02d}:{rng.randint(0, 59):02d}",
                       f"+{rng.randint(0, 14):02d}{rng.randint(0, 59):02d}", "+16", " UTC", "+5", "+05:3"])


def _rows(seed: int, n: int, strict: bool) -> bytes:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        tz = "" if rng.random() < 0.05 else _stamp(rng, strict) + _zone(rng, strict)
        ts = "" if rng.random() < 0.05 else _stamp(rng, strict)
        d = "" if rng.random() < 0.05 else _stamp(rng, strict)[:10]
        out.append(f"{i},{tz},{ts},{d}")
    return ("\n".join(out) + "\n").encode()


def _lines_each(data: bytes):
    for line in data.splitlines(keepends=True):
        yield line


@pytest.mark.parametrize("tz", ZONES)
def test_compiled_reader_accepts_only_what_it_reads_exactly(tz):
    """Line by line (so a declined line does not hide the others): each line the
    compiled reader accepts decodes to the exact path's values."""
    data = _rows(len(tz), 3000, strict=False)
    accepted = 0
    for line in _lines_each(data):
        got = csv_kernels.decode(line, CSV, OIDS, wait=True, naive_utc=tz == "UTC")
        try:
            ref = _exact(line, tz)
        except PgError:
            assert got is None, line
            continue
        if got is not None:
            accepted += 1
            _same(got, ref)
    assert accepted > 100


@pytest.mark.parametrize("tz", ZONES)
def test_compiled_reader_on_strict_chunks(tz):
    data = _rows(7 + len(tz), 20000, strict=True)
    got = csv_kernels.decode(data, CSV, OIDS, wait=True, naive_utc=tz == "UTC")
    if tz == "UTC":
        assert got is not None
    if got is not None:
        _same(got, _exact(data, tz))


def _strings(values: list[str | None]):
    raw = [b"" if v is None else v.encode() for v in values]
    offsets = np.cumsum([0] + [len(r) for r in raw]).astype(np.int64)
    nulls = np.array([v is None for v in values])
    return np.frombuffer(b"".join(raw) or b"\0", np.uint8), offsets, nulls if nulls.any() else None


@pytest.mark.parametrize("tz", ZONES)
@pytest.mark.parametrize("strict", [True, False])
def test_numpy_reader_matches_exact_path(tz, strict):
    """The vectorised reader, column by column, on whole columns and on each
    value alone: the exact path's values, or None."""
    rng = random.Random(tz + str(strict))
    kinds = {"timestamptz": wiretypes.TIMESTAMPTZ, "timestamp": wiretypes.TIMESTAMP, "date": wiretypes.DATE}
    for kind, oid in kinds.items():
        values = []
        for _ in range(400):
            v = _stamp(rng, strict) + (_zone(rng, strict) if kind == "timestamptz" else "")
            values.append(None if rng.random() < 0.05 else v[:10] if kind == "date" else v)
        for chunk in [values] + [[v] for v in values]:
            data, offsets, nulls = _strings(chunk)
            got = copy_temporal.parse_column(data, offsets, nulls, kind, tz)
            try:
                ref, ref_nulls = wiretypes.pylist_to_column(oid, [None if v is None else wiretypes.decode_text(oid, v, tz=tz)
                                                                  for v in chunk])
            except PgError:
                assert got is None
                continue
            if strict:
                assert got is not None, chunk[:3]
            if got is not None:
                _same([(got, nulls)], [(ref, ref_nulls)])


def test_dst_hours_resolved_like_the_exact_path():
    """Every minute around Berlin's and Lord Howe's transitions (gaps, overlaps, half hours)."""
    for tz, days in (("Europe/Berlin", ("2024-03-31", "2024-10-27")), ("Australia/Lord_Howe", ("2024-04-07", "2024-10-06"))):
        values = [f"{day} {h:02d}:{m:02d}:00" for day in days for h in range(0, 5) for m in range(0, 60, 5)]
        data, offsets, nulls = _strings(values)
        got = copy_temporal.parse_column(data, offsets, nulls, "timestamptz", tz)
        ref, _ = wiretypes.pylist_to_column(wiretypes.TIMESTAMPTZ,
                                            [wiretypes.decode_text(wiretypes.TIMESTAMPTZ, v, tz=tz) for v in values])
        assert got is not None and np.array_equal(got, ref)


def _cuts(data: bytes, rng: random.Random, count: int) -> list[bytes]:
    """``data`` cut at random line ends: each chunk is read from its own start
    (the reader remembers no minute across calls)."""
    ends = sorted(rng.sample(range(len(data)), count))
    pieces, start = [], 0
    for e in ends:
        cut = data.find(b"\n", e) + 1
        if cut > start:
            pieces.append(data[start:cut])
            start = cut
    return pieces + ([data[start:]] if start < len(data) else [])


@pytest.mark.parametrize("tz", ["UTC", "Europe/Berlin"])
@pytest.mark.parametrize("seed", range(3))
def test_event_times_in_chunks_cut_anywhere(tz, seed):
    """Sorted timestamps (the fixed-width path that reuses the previous row's
    minute): every chunk the compiled reader accepts has the exact path's
    values; one holding a row PostgreSQL rejects is declined; clean event
    data in UTC is always accepted."""
    for strict in (True, False):
        data = event_times.event_rows(seed * 2 + strict, 6000, () if strict else (*event_times.PG_READS,
                                                                                    *event_times.REFUSED))
        for piece in _cuts(data, random.Random(seed), 40):
            got = csv_kernels.decode(piece, CSV, OIDS, wait=True, naive_utc=tz == "UTC")
            try:
                ref = _exact(piece, tz)
            except PgError:
                assert got is None
                continue
            if strict and tz == "UTC":
                assert got is not None, piece[:200]
            if got is not None:
                _same(got, ref)


def test_repeated_minute_prefix_with_a_bad_tail_declines():
    """Rows that repeat the remembered minute but end wrongly (second 60, a
    seventh digit, a zone on a timestamp, a letter, a zero byte, a NUL minute
    prefix before any row was read) go to the general path and decline."""
    good = b"1,2024-02-29T23:59:58.000001Z,2024-02-29T23:59:58.000001,2024-02-29\n"
    for bad in (b"60.000000", b"59.1234567", b"59.000001Z", b"5x.000001", b"59.00000\x00", b"59,000001"):
        row = b"2,2024-02-29T23:59:59.000001Z,2024-02-29T23:59:" + bad + b",2024-02-29\n"
        assert csv_kernels.decode(good + row, CSV, OIDS, wait=True) is None, bad
    zeros = b"1,2024-01-01T00:00:00Z," + b"\0" * 16 + b":00.000000,2024-01-01\n"
    assert csv_kernels.decode(zeros, CSV, OIDS, wait=True) is None
    got = csv_kernels.decode(good + good.replace(b"58.000001", b"59.999999"), CSV, OIDS, wait=True)
    assert got is not None
    assert got[2][0].astype("datetime64[us]").astype(str).tolist() == ["2024-02-29T23:59:58.000001",
                                                                         "2024-02-29T23:59:59.999999"]


@pytest.mark.parametrize("nulls", [1, 50, 2000])
def test_rows_shorter_than_any_value(nulls):
    """The reader sizes its columns for rows of non-NULL values; a chunk of
    shorter rows (NULLs) fills them before its end and the rest is read on
    (the columns joined): the exact path's rows, all of them."""
    good = b"7,2024-01-01 00:00:00.5+00,2024-01-01 00:00:00.25,2024-01-01\n"
    data = good + b",,,\n" * nulls + good + b"8,,,\n" * nulls + good
    got = csv_kernels.decode(data, CSV, OIDS, wait=True)
    assert got is not None and len(got[0][0]) == 3 + 2 * nulls
    _same(got, _exact(data, "UTC"))


@pytest.mark.parametrize("oid", [wiretypes.TIMESTAMP, wiretypes.TIMESTAMPTZ])
def test_timestamp_last_in_the_row_up_to_the_chunk_end(oid):
    """A timestamp as the last column: the fixed-width path's 8-byte loads
    end on the chunk's final newline, never past it; every chunk length
    (cut after each row) gives the exact path's values."""
    zone = "+05:30" if oid == wiretypes.TIMESTAMPTZ else ""
    stamps = ["2024-02-29T23:59:58.000001", "2024-02-29T23:59:58.5", "2024-02-29T23:59:59.999999",
              "2024-02-29T23:59:59.123", "2024-02-29T23:59:59.124", "2024-03-01 00:00:00.000000"]
    lines = [f"{i},{s}{zone if i % 2 else ''}\n".encode() for i, s in enumerate(stamps)]
    names = ["id", "t"]
    for k in range(1, len(lines) + 1):
        data = b"".join(lines[:k])
        got = csv_kernels.decode(data, CSV, [wiretypes.INT4, oid], wait=True)
        rows, count = copyformat._python_rows(data, CSV, 1, names)
        assert got is not None
        _same(got, copyformat._rows_to_columns(rows, [wiretypes.INT4, oid], names, count, "UTC"))
