"""The on-disk codec (catalog/storage/records.py): every value kind round-trips with
its type, files carry a magic number and a format version, and decoding
refuses what it does not know instead of running code named by the data."""
from __future__ import annotations

import datetime as dt
import decimal
import pickle
import uuid
from dataclasses import dataclass
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from splitstream.catalog.storage import records
from splitstream.protocol import types as wiretypes

VALUES = [
    None, True, False, 0, -5, 2 ** 70, -(2 ** 65), 1.5, "héllo", "bad \udc80 surrogate", b"\x00raw",
    decimal.Decimal("1.20"), decimal.Decimal("-0.000"), dt.date(2020, 1, 2), dt.datetime(2020, 1, 2, 3, 4, 5, 6),
    dt.datetime(2020, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone.utc),
    dt.datetime(2020, 1, 2, tzinfo=dt.timezone(dt.timedelta(hours=-5, minutes=-30))),
    dt.datetime(2020, 3, 4, 5, tzinfo=ZoneInfo("Europe/Paris")), dt.time(1, 2, 3, 4),
    dt.time(1, 2, tzinfo=dt.timezone.utc), dt.timedelta(days=-1, seconds=5, microseconds=7),
    wiretypes.Interval(1, 2, 3), uuid.UUID(int=12345), [1, [2, (3, "a")]], (1,), (), {"a": 1, 2: [None]},
    {1, 2}, frozenset({"x"}), np.int64(5), np.float32(2.5),
    [(i, f"s{i}", decimal.Decimal(i), None if i % 3 else dt.date(2020, 1, 1)) for i in range(100)],
    [("same",)] * 40, [()] * 40,
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_values_round_trip_with_their_types(value):
    out = records.loads(records.dumps(value))
    assert out == value
    assert type(out) is type(value)
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        assert all(type(a) is type(b) for x, y in zip(out, value) for a, b in zip(x, y))


def test_nan_and_infinity_markers_keep_their_identity():
    assert records.loads(records.dumps(float("nan"))) != records.loads(records.dumps(float("nan")))
    for marker in (wiretypes.DATE_POS_INF, wiretypes.DATE_NEG_INF, wiretypes.TS_POS_INF, wiretypes.TS_NEG_INF,
                   wiretypes.TSTZ_POS_INF, wiretypes.TSTZ_NEG_INF):
        assert records.loads(records.dumps(marker)) is marker


ARRAYS = [
    np.arange(10, dtype=np.int32), np.zeros((3, 4)), np.array(["2020-01-01", "NaT"], "datetime64[us]"),
    np.zeros(0, bool), np.arange(10)[::2], np.array(["u", "vw"], "U3"),
    np.array(["a", None, 3, decimal.Decimal(1)], object),
    np.array([f"x{i}" for i in range(100)] + [None, ""], object),
    np.array([decimal.Decimal(i) / 7 for i in range(50)] + [None], object),
]


@pytest.mark.parametrize("arr", ARRAYS, ids=lambda a: f"{a.dtype}{a.shape}")
def test_arrays_round_trip_writable(arr):
    out = records.loads(records.dumps(arr))
    assert out.dtype == arr.dtype and out.shape == arr.shape
    assert [type(v) for v in out.ravel().tolist()] == [type(v) for v in arr.ravel().tolist()]
    np.testing.assert_array_equal(out, arr)
    assert out.flags.writeable


@dataclass(frozen=True)
class _Point:
    x: int
    y: str = "b"


records.register_dataclass(_Point, "test.point")


def test_records_are_named_fields_and_decode_to_their_class():
    data = records.dumps([_Point(1, "a")])
    assert b"x" in data and b"test.point" in data
    assert records.loads(data) == [_Point(1, "a")]


def test_unknown_types_are_refused_not_pickled():
    class Opaque:
        pass

    with pytest.raises(TypeError):
        records.dumps(Opaque())
    with pytest.raises(TypeError):
        records.dumps(np.zeros(2, dtype=[("a", "i4")]))


def test_decoding_refuses_unknown_tags_and_records():
    with pytest.raises(records.FormatError):
        records.loads(b"\x80\x05junk")
    with pytest.raises(records.FormatError, match="unknown record type"):
        records.loads(records.dumps(records.Record("test.point", {"x": 1, "y": "c"})).replace(b"test.point", b"test.pOint"))


def test_a_newer_record_version_is_refused():
    rt = records.record_type("test.point")
    data = records.dumps(_Point(1)).replace(rt.head, rt.head[:-4] + (rt.version + 1).to_bytes(2, "little") + rt.head[-2:])
    with pytest.raises(records.FormatError, match="newer"):
        records.loads(data)


def test_file_headers_name_both_versions():
    head = records.file_header(b"SSTEST")
    assert records.check_header(head + b"x", b"SSTEST", "f") == records.HEADER_SIZE
    newer = head[:8] + (records.FORMAT_VERSION + 1).to_bytes(4, "little")
    with pytest.raises(records.FormatVersionError) as e:
        records.check_header(newer, b"SSTEST", "f")
    assert f"version {records.FORMAT_VERSION + 1}" in e.value.message and f"version {records.FORMAT_VERSION}" in e.value.message
    with pytest.raises(records.FormatVersionError) as e:
        records.check_header(pickle.dumps({"old": 1}, protocol=5), b"SSTEST", "f")
    assert e.value.found == records.PICKLE_FORMAT_VERSION
    with pytest.raises(records.FormatError, match="bad magic"):
        records.check_header(b"SSOTHER\0" + head[8:], b"SSTEST", "f")


def test_encoding_holds_no_pickle():
    data = records.dumps(VALUES + ARRAYS)
    assert b"splitstream" not in data and b"numpy" not in data and b"\x80\x05" not in data[:2]


def test_logged_operations_are_named_records():
    from splitstream.catalog.storage import wal
    from splitstream.catalog.objects.model import ColumnDef, Relation
    from splitstream.catalog.storage.wal_records import StreamBatch

    rel = Relation(16400, "public", "s_id_seq", "S", (ColumnDef("last_value", 20),), owned_by=(16390, "id"),
                   options=(("capacity", "10"), ("mode", "x")), column_comments=(("last_value", "c"),))
    cols = [(np.arange(3, dtype=np.int32), None), (np.array(["a", None, "c"], object), np.array([False, True, False]))]
    ops = [("rel", rel), ("insert", 16401, cols), ("setval", 16400, 7), StreamBatch(16402, cols, 3, "key")]
    body = wal.dumps(ops)
    for name in (b"op.rel", b"relation", b"owned_by", b"table", b"column", b"op.insert", b"columns", b"data",
                 b"nulls", b"op.setval", b"value", b"op.stream", b"batch_key"):
        assert name in body
    back = wal.decode_body(body)
    assert back[0] == ("rel", rel) and back[2] == ("setval", 16400, 7)
    assert back[3].batch_key == "key" and back[3].seq == 3
    for got, want in ((back[1][2], cols), (back[3].columns, cols)):
        for (d, m), (d0, m0) in zip(got, want):
            assert d.tolist() == d0.tolist() and (m is None) == (m0 is None)
