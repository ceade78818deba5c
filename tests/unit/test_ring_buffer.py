"""Unit tests for the stream caching layer (executor/stream/ring_buffer.py).

The single-threaded tests compare against a plain Python list model of every
row ever appended; the threaded tests use self-checking rows (y = mix(x),
s = str(x)) plus the tids returned by ``append`` to prove a scan never returns
a row whose content differs from what was inserted at that tid.
"""

from __future__ import annotations

import sys
import threading
import uuid
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from splitstream.executor.stream.ring_buffer import RingBuffer, ScanResult

I64 = np.dtype(np.int64)
OBJ = np.dtype(object)


def _obj(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


def _mix(x: np.ndarray) -> np.ndarray:
    """Cheap vectorised hash used to make rows self-checking."""
    u = x.astype(np.uint64)
    u = (u * np.uint64(0x9E3779B97F4A7C15)) ^ (u >> np.uint64(29))
    return (u & np.uint64(0x7FFFFFFFFFFFFFFF)).astype(np.int64)


def _rows(res: ScanResult) -> list[tuple]:
    """Scan result as Python tuples with None for NULL."""
    out = []
    for i in range(res.num_rows):
        row = []
        for col, null in zip(res.columns, res.nulls):
            if null is not None and null[i]:
                row.append(None)
            elif col.dtype == object:
                row.append(col[i])
            else:
                row.append(col[i].item())
        out.append(tuple(row))
    return out


# --------------------------------------------------------------------- basics
def test_roundtrip_fixed_dtypes() -> None:
    cols = [
        ("b", np.dtype(bool)),
        ("i16", np.dtype(np.int16)),
        ("i32", np.dtype(np.int32)),
        ("i64", I64),
        ("f32", np.dtype(np.float32)),
        ("f64", np.dtype(np.float64)),
        ("d", np.dtype("datetime64[D]")),
        ("ts", np.dtype("datetime64[us]")),
    ]
    rb = RingBuffer(cols, 16)
    n = 5
    data = [
        np.array([True, False, True, False, True]),
        np.arange(n, dtype=np.int16),
        np.arange(n, dtype=np.int32) * 1000,
        np.arange(n, dtype=np.int64) << 40,
        np.linspace(0, 1, n, dtype=np.float32),
        np.linspace(0, 1, n),
        np.array(["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05"], dtype="datetime64[D]"),
        np.array(["2024-01-01T00:00:00.000001"] * n, dtype="datetime64[us]"),
    ]
    assert rb.append(data, [None] * len(cols)) == (0, n)
    res = rb.scan(0)
    assert (res.first_tid, res.end_tid, res.skipped) == (0, n, 0)
    assert res.names == [c for c, _ in cols]
    for got, want, (_, dt) in zip(res.columns, data, cols):
        assert got.dtype == dt
        np.testing.assert_array_equal(got, want)
    assert all(m is None for m in res.nulls)


def test_scan_returns_fresh_arrays() -> None:
    rb = RingBuffer([("a", I64)], 8)
    rb.append([np.arange(4)], [None])
    res = rb.scan(0)
    res.columns[0][:] = -1
    np.testing.assert_array_equal(rb.scan(0).columns[0], np.arange(4))


def test_dtype_conversion_on_append() -> None:
    rb = RingBuffer([("a", np.dtype(np.float64)), ("d", np.dtype("datetime64[D]"))], 8)
    rb.append([[1, 2, 3], np.array(["2020-01-01", "2020-01-02", "2020-01-03"])], None)
    res = rb.scan(0)
    assert res.columns[0].dtype == np.float64
    assert res.columns[1][2] == np.datetime64("2020-01-03")


def test_nulls_fixed_and_object() -> None:
    rb = RingBuffer([("a", I64), ("s", OBJ)], 8)
    rb.append(
        [np.array([1, 2, 3, 4]), _obj(["x", None, "z", "w"])],
        [np.array([False, True, False, False]), np.array([False, False, True, False])],
    )
    res = rb.scan(0)
    np.testing.assert_array_equal(res.nulls[0], [False, True, False, False])
    np.testing.assert_array_equal(res.nulls[1], [False, True, True, False])
    assert list(res.columns[1]) == ["x", None, None, "w"]
    # a batch without nulls reports None masks
    rb.append([np.array([5]), _obj(["v"])], [None, None])
    res = rb.scan(4)
    assert res.nulls == [None, None]


def test_object_values_utf8_and_mixed() -> None:
    rb = RingBuffer([("s", OBJ)], 64)
    values = ["", "plain", "grüße", "日本語テキスト", "emoji 🎉" * 5, "a" * 1000, "\udc80lone"]
    rb.append([_obj(values)], [None])
    assert list(rb.scan(0).columns[0]) == values
    mixed = [Decimal("1.50"), b"\x00\xff", "txt", None, [1, 2], [3, 4], uuid.UUID(int=7), ("t", 1)]
    rb.append([_obj(mixed)], [None])
    res = rb.scan(len(values))
    assert list(res.columns[0]) == mixed
    np.testing.assert_array_equal(res.nulls[0], [v is None for v in mixed])


def test_numpy_unicode_input_and_list_input() -> None:
    rb = RingBuffer([("s", OBJ)], 8)
    rb.append([np.array(["ab", "cde"])], [None])
    rb.append([["x", "yz"]], [None])
    assert list(rb.scan(0).columns[0]) == ["ab", "cde", "x", "yz"]


def test_append_validation() -> None:
    rb = RingBuffer([("a", I64), ("b", I64)], 8)
    with pytest.raises(ValueError):
        rb.append([np.arange(3)], [None])
    with pytest.raises(ValueError):
        rb.append([np.arange(3), np.arange(4)], [None, None])
    with pytest.raises(ValueError):
        rb.append([np.arange(3), np.arange(3)], [np.zeros(2, bool), None])
    with pytest.raises(ValueError):
        RingBuffer([("a", I64)], 0)
    assert rb.write_tid == 0 and rb.visible_end == 0  # nothing claimed on error
    assert rb.append([np.arange(0), np.arange(0)], [None, None]) == (0, 0)


# --------------------------------------------------------------- wraparound
def test_wraparound_and_skipped() -> None:
    rb = RingBuffer([("a", I64), ("s", OBJ)], 10)
    rb.append([np.arange(7), _obj([str(i) for i in range(7)])], [None, None])
    rb.append([np.arange(7, 14), _obj([str(i) for i in range(7, 14)])], [None, None])
    assert rb.overwritten == 4
    res = rb.scan(0)
    assert (res.first_tid, res.end_tid, res.skipped) == (4, 14, 4)
    np.testing.assert_array_equal(res.columns[0], np.arange(4, 14))
    assert list(res.columns[1]) == [str(i) for i in range(4, 14)]
    res = rb.scan(6, max_rows=5)
    assert (res.first_tid, res.end_tid, res.skipped) == (6, 11, 0)
    np.testing.assert_array_equal(res.columns[0], np.arange(6, 11))


def test_batch_larger_than_capacity() -> None:
    rb = RingBuffer([("a", I64), ("s", OBJ)], 5)
    rb.append([np.arange(3), _obj(list("abc"))], [None, None])
    assert rb.append([np.arange(100, 112), _obj([f"v{i}" for i in range(12)])], [None, None]) == (3, 15)
    res = rb.scan(0)
    assert (res.first_tid, res.end_tid, res.skipped) == (10, 15, 10)
    np.testing.assert_array_equal(res.columns[0], np.arange(107, 112))
    assert list(res.columns[1]) == [f"v{i}" for i in range(7, 12)]
    # exactly one full lap, ending at a run boundary
    rb.append([np.arange(5), _obj(list("klmno"))], [None, None])
    assert list(rb.scan(15).columns[1]) == list("klmno")


def test_scan_beyond_visible_and_empty() -> None:
    rb = RingBuffer([("a", I64), ("s", OBJ)], 4)
    res = rb.scan(0)
    assert (res.num_rows, res.first_tid, res.end_tid, res.skipped) == (0, 0, 0, 0)
    assert res.columns[0].dtype == I64 and res.columns[1].dtype == OBJ
    rb.append([np.arange(3), _obj(list("abc"))], [None, None])
    res = rb.scan(10)
    assert (res.num_rows, res.end_tid, res.skipped) == (0, 10, 0)
    assert rb.scan(1, max_rows=0).num_rows == 0


# ------------------------------------------------------ string buffer runs
def test_string_buffers_alternate_and_are_replaced() -> None:
    rb = RingBuffer([("s", OBJ)], 4)
    col = rb._cols[0]
    rb.append([_obj(["aaaa"] * 4)], [None])  # run 0 -> parity 0
    gen0, data0, _ = col.runs[0].snapshot()
    assert gen0 == 0 and bytes(data0) == b"aaaa" * 4
    rb.append([_obj(["bb"] * 4)], [None])  # run 1 -> parity 1, parity 0 untouched
    assert col.runs[1].snapshot()[0] == 1
    assert col.runs[0].snapshot()[1] is data0
    rb.append([_obj(["c"] * 2)], [None])  # run 2 starts: parity 0 gets a fresh buffer
    gen2, data2, _ = col.runs[0].snapshot()
    assert gen2 == 2 and data2 is not data0
    assert bytes(data0) == b"aaaa" * 4  # an old reference (a scan's) still reads intact data
    assert bytes(data2) == b"cc"
    assert list(rb.scan(0).columns[0]) == ["bb", "bb", "c", "c"]


def test_string_memory_is_bounded() -> None:
    rb = RingBuffer([("s", OBJ)], 100)
    batch = _obj(["x" * 50] * 30)
    for _ in range(200):
        rb.append([batch], [None])
    # at most two runs of strings (plus the last partially written run)
    assert rb.memory_bytes() < 100 * (8 + 4 + 1) + 3 * 100 * 50
    res = rb.scan(0)
    assert res.num_rows == 100 and res.skipped == 6000 - 100


def test_memory_bytes_counts_fixed_and_strings() -> None:
    rb = RingBuffer([("a", I64)], 1000)
    assert rb.memory_bytes() == 1000 * 8 == 1000 * rb.row_width()      # no NULL flags until a NULL arrives
    rb.append([np.arange(5)], [np.array([False] * 5)])
    assert rb.memory_bytes() == 1000 * 8
    rb.append([np.arange(5)], [np.array([True, False, False, False, False])])
    assert rb.memory_bytes() == 1000 * 8 + 1000 == 1000 * rb.row_width() + rb.null_flag_bytes()
    assert rb.scan(0).nulls[0].tolist() == [False] * 5 + [True, False, False, False, False]
    rb2 = RingBuffer([("s", OBJ)], 10)
    before = rb2.memory_bytes()
    rb2.append([_obj(["y" * 100])], [None])
    assert rb2.memory_bytes() - before == 100


# ---------------------------------------------------------------- add_column
def test_add_column_null_and_default() -> None:
    rb = RingBuffer([("a", I64)], 6)
    rb.append([np.arange(4)], [None])
    rb.add_column("b", np.dtype(np.int32))
    rb.add_column("c", np.dtype(np.float64), default=2.5)
    rb.add_column("s", OBJ)
    rb.add_column("t", OBJ, default="dflt")
    assert rb.names == ["a", "b", "c", "s", "t"]
    res = rb.scan(0)
    assert res.nulls[1] is not None and res.nulls[1].all()
    assert res.nulls[2] is None and (res.columns[2] == 2.5).all()
    assert list(res.columns[3]) == [None] * 4
    assert list(res.columns[4]) == ["dflt"] * 4
    with pytest.raises(ValueError):
        rb.append([np.arange(2)], [None])
    with pytest.raises(ValueError):
        rb.add_column("a", I64)
    rb.append(
        [np.arange(10, 14), np.arange(4, dtype=np.int32), np.ones(4), _obj(list("wxyz")), _obj(list("WXYZ"))],
        None,
    )
    res = rb.scan(0)
    assert (res.first_tid, res.end_tid) == (2, 8)
    assert _rows(res) == [
        (2, None, 2.5, None, "dflt"),
        (3, None, 2.5, None, "dflt"),
        (10, 0, 1.0, "w", "W"),
        (11, 1, 1.0, "x", "X"),
        (12, 2, 1.0, "y", "Y"),
        (13, 3, 1.0, "z", "Z"),
    ]


# ------------------------------------------------------------------ wait_for
def test_wait_for() -> None:
    rb = RingBuffer([("a", I64)], 8)
    assert rb.wait_for(0, 0.01) is False
    timer = threading.Timer(0.05, lambda: rb.append([np.arange(2)], [None]))
    timer.start()
    assert rb.wait_for(0, 5.0) is True
    timer.join()
    assert rb.wait_for(1, 0.0) is True
    assert rb.wait_for(2, 0.01) is False


# ------------------------------------------------------- property: list model
_value = st.one_of(
    st.none(),
    st.text(max_size=20),
    st.sampled_from(["", "short", "x" * 30, "ü", "日本"]),
)


@st.composite
def _batches(draw):
    capacity = draw(st.integers(1, 24))
    ops = draw(
        st.lists(
            st.tuples(
                st.integers(0, 60),  # batch size
                st.integers(0, 80),  # scan from
                st.one_of(st.none(), st.integers(0, 30)),  # max_rows
                st.integers(0, 2**31),  # seed for values
            ),
            min_size=1,
            max_size=12,
        )
    )
    return capacity, ops


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_batches(), st.data())
def test_property_against_list_model(case, data) -> None:
    capacity, ops = case
    rb = RingBuffer([("i", I64), ("f", np.dtype(np.float64)), ("s", OBJ)], capacity)
    model: list[tuple] = []
    for n, from_tid, max_rows, seed in ops:
        rng = np.random.default_rng(seed)
        ints = rng.integers(-1000, 1000, n)
        fl = rng.random(n)
        fnull = rng.random(n) < 0.2
        strs = data.draw(st.lists(_value, min_size=n, max_size=n))
        first, end = rb.append([ints, fl, _obj(strs)], [None, fnull, None])
        assert (first, end) == (len(model), len(model) + n)
        for i in range(n):
            model.append((int(ints[i]), None if fnull[i] else float(fl[i]), strs[i]))
        assert rb.visible_end == rb.write_tid == len(model)
        assert rb.overwritten == max(0, len(model) - capacity)

        res = rb.scan(from_tid, max_rows)
        vis = len(model)
        lo = min(max(from_tid, vis - capacity), vis) if from_tid < vis else from_tid
        hi = lo if from_tid >= vis else (vis if max_rows is None else min(vis, lo + max_rows))
        assert res.first_tid == lo and res.end_tid == hi
        assert res.num_rows + res.skipped == res.end_tid - from_tid
        assert _rows(res) == model[lo:hi]


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 40),
    st.lists(st.tuples(st.integers(0, 100), st.integers(1, 50)), min_size=1, max_size=15),
)
def test_property_incremental_scanner_accounting(capacity, ops) -> None:
    """A scanner that always resumes at end_tid sees each tid at most once and
    accounts every tid as either returned or skipped."""
    rb = RingBuffer([("x", I64), ("s", OBJ)], capacity)
    cursor = 0
    seen: list[int] = []
    skipped = 0
    total = 0
    for n, morsel in ops:
        rb.append([np.arange(total, total + n), _obj([str(v) for v in range(total, total + n)])], [None, None])
        total += n
        res = rb.scan(cursor, morsel)
        assert res.first_tid == cursor + res.skipped
        xs = res.columns[0].tolist()
        assert xs == list(range(res.first_tid, res.end_tid))
        assert list(res.columns[1]) == [str(v) for v in xs]
        seen.extend(xs)
        skipped += res.skipped
        cursor = res.end_tid
    while cursor < rb.visible_end:
        res = rb.scan(cursor)
        seen.extend(res.columns[0].tolist())
        skipped += res.skipped
        cursor = res.end_tid
    assert len(seen) + skipped == total
    assert seen == sorted(set(seen))
    assert len(seen) >= min(capacity, total)


# ----------------------------------------------------------------- threading
@pytest.fixture
def fast_thread_switching():
    """Switch GIL holders far more often than the 5 ms default so claim, write,
    copy and validation steps of different threads interleave aggressively."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def _run_concurrent(capacity: int, rows_per_writer: int, batch_sizes, seed: int):
    """Two appenders + one continuous scanner; returns what everyone saw."""
    rb = RingBuffer([("x", I64), ("y", I64), ("s", OBJ)], capacity)
    written: dict[int, list[tuple[int, np.ndarray]]] = {0: [], 1: []}
    errors: list[BaseException] = []
    done = threading.Event()

    def writer(w: int) -> None:
        try:
            rng = np.random.default_rng(seed + w)
            base = (w + 1) * 10**12
            pos = 0
            while pos < rows_per_writer:
                n = min(int(rng.choice(batch_sizes)), rows_per_writer - pos)
                x = np.arange(base + pos, base + pos + n, dtype=np.int64)
                s = _obj([str(v) for v in x.tolist()])
                first, end = rb.append([x, _mix(x), s], [None, None, None])
                assert end - first == n
                written[w].append((first, x))
                pos += n
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    scanned: list[ScanResult] = []

    def scanner() -> None:
        try:
            cursor = 0
            while True:
                finished = done.is_set()
                res = rb.scan(cursor, 4096)
                if res.num_rows or res.skipped:
                    scanned.append(res)
                cursor = res.end_tid
                if finished and cursor >= rb.visible_end:
                    return
                if not res.num_rows and not finished:
                    rb.wait_for(cursor, 0.01)
        except BaseException as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(w,)) for w in (0, 1)]
    st_ = threading.Thread(target=scanner)
    st_.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    done.set()
    st_.join(240)
    assert not errors, errors
    assert not st_.is_alive() and not any(t.is_alive() for t in threads)
    return rb, written, scanned


def _check_scans(rb: RingBuffer, written, scanned) -> tuple[int, int]:
    """Every returned row equals what was inserted at its tid; tids contiguous."""
    truth = np.full(rb.write_tid, -1, dtype=np.int64)
    for batches in written.values():
        for first, x in batches:
            truth[first:first + len(x)] = x
    assert (truth >= 0).all()
    cursor = 0
    returned = skipped = 0
    for res in scanned:
        assert res.first_tid == cursor + res.skipped
        x, y, s = res.columns
        assert all(m is None for m in res.nulls)
        np.testing.assert_array_equal(x, truth[res.first_tid:res.end_tid])
        np.testing.assert_array_equal(y, _mix(x))
        assert s.tolist() == [str(v) for v in x.tolist()]
        returned += res.num_rows
        skipped += res.skipped
        cursor = res.end_tid
    assert cursor == rb.visible_end == rb.write_tid
    assert returned + skipped == rb.visible_end
    return returned, skipped


@pytest.mark.timeout(280)
def test_concurrent_large_capacity_no_loss_no_duplicates() -> None:
    n = 1_000_000
    rb, written, scanned = _run_concurrent(capacity=2 * n + 16, rows_per_writer=n, batch_sizes=[1000], seed=1)
    returned, skipped = _check_scans(rb, written, scanned)
    assert skipped == 0 and returned == 2 * n
    xs = np.concatenate([r.columns[0] for r in scanned])
    assert len(np.unique(xs)) == 2 * n


@pytest.mark.timeout(280)
def test_concurrent_small_capacity_never_returns_overwritten_rows(fast_thread_switching) -> None:
    rb, written, scanned = _run_concurrent(
        capacity=1024, rows_per_writer=300_000, batch_sizes=[1, 7, 100, 1000, 1023, 1024, 1500, 3000], seed=2
    )
    returned, skipped = _check_scans(rb, written, scanned)
    assert returned > 0
    assert rb.memory_bytes() < 1024 * 64 + 4 * 1024 * 20  # strings of at most ~2 runs live


@pytest.mark.timeout(120)
def test_concurrent_writers_tiny_capacity_content_matches_tid(fast_thread_switching) -> None:
    """Writers lapping the ring many times within one batch time must not leave
    a slot holding an older tid's row (the lap-wait guard)."""
    rb, written, scanned = _run_concurrent(capacity=8, rows_per_writer=50_000, batch_sizes=[1, 3, 5, 8, 13], seed=3)
    _check_scans(rb, written, scanned)
    res = rb.scan(0)
    truth = {}
    for batches in written.values():
        for first, x in batches:
            for i, v in enumerate(x.tolist()):
                truth[first + i] = v
    assert res.columns[0].tolist() == [truth[t] for t in range(res.first_tid, res.end_tid)]
