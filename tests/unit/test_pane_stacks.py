"""The two-level Two-Stacks of sliding windows (executor/stream/two_stacks.py)
against recombining every live pane: random panes, keys appearing and
vanishing, the clock stepping by one pane or jumping, a sealed pane changed
late, window lengths whose blocks divide it or not; int, float (NaN, mixed
magnitudes), numeric and text aggregates."""
from __future__ import annotations

import decimal

import numpy as np
import pytest

from splitstream.catalog.datatypes.vector import Col
from splitstream.executor.execution import expr
from splitstream.executor.execution.aggregates import AggSpec, GroupTable
from splitstream.executor.stream import two_stacks
from splitstream.executor.stream.sliding import PaneSlider, WindowOptions
from splitstream.protocol import oids

WIDTH = 1_000


def _specs():
    x, f, n = expr.ColRef(1, oids.INT4), expr.ColRef(2, oids.FLOAT8), expr.ColRef(3, oids.NUMERIC)
    return [AggSpec("count", [], [], star=True), AggSpec("sum", [x], [oids.INT4]), AggSpec("min", [x], [oids.INT4]),
            AggSpec("max", [f], [oids.FLOAT8]), AggSpec("min", [f], [oids.FLOAT8]), AggSpec("sum", [f], [oids.FLOAT8]),
            AggSpec("avg", [n], [oids.NUMERIC]), AggSpec("bool_and", [x], [oids.BOOL]),
            AggSpec("stddev", [f], [oids.FLOAT8])]


def _pane(rng, keys: int, rows: int) -> GroupTable:
    t = GroupTable([oids.INT4], _specs())
    k = Col(rng.integers(0, keys, rows).astype(np.int32), None, oids.INT4)
    x = rng.integers(-1000, 1000, rows).astype(np.int32)
    f = rng.choice([1e-9, 1.0, 1e12, np.nan, -3.5], rows) * rng.integers(1, 5, rows)
    nums = np.array([decimal.Decimal(int(v)) / 7 for v in x.tolist()], dtype=object)
    b = Col(x > -900, None, oids.BOOL)
    xc, fc = Col(x, None, oids.INT4), Col(f, None, oids.FLOAT8)
    t.consume([k], [([], None), ([xc], None), ([xc], None), ([fc], None), ([fc], None), ([fc], None),
                    ([Col(nums, None, oids.NUMERIC)], None), ([b], None), ([fc], None)], rows)
    return t


def _recombined(slider: PaneSlider, now: int):
    lo = slider.win.live_from(now)
    out = GroupTable([oids.INT4], slider.specs)
    for p in sorted(slider.panes):
        if p >= lo:
            out.merge(slider.panes[p])
    return _rows(out.result())


def _rows(batch) -> list:
    rows = list(zip(*[c.to_pylist() for c in batch.cols]))
    return sorted((tuple("nan" if isinstance(v, float) and v != v else v for v in r) for r in rows), key=repr)


def _close(a: list, b: list) -> bool:
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b):
        for va, vb in zip(ra, rb):
            if isinstance(va, float) and isinstance(vb, float):
                if not np.isclose(va, vb, rtol=1e-9, atol=1e-6):
                    return False
            elif isinstance(va, decimal.Decimal) and isinstance(vb, decimal.Decimal):
                if abs(va - vb) > abs(vb) * decimal.Decimal("1e-24"):     # 28-digit sums added in another order
                    return False
            elif va != vb:
                return False
    return True


@pytest.mark.parametrize("panes, keys, seed", [(1, 5, 1), (7, 30, 2), (20, 50, 3), (37, 200, 4), (100, 80, 5)])
def test_stacks_equal_recombining_live_panes(panes, keys, seed):
    rng = np.random.default_rng(seed)
    slider = PaneSlider([oids.INT4], _specs(), WindowOptions(sw_us=panes * WIDTH, pane_width_us=WIDTH))
    now = WIDTH
    for step in range(3 * panes + 12):
        p = (now - 1) // WIDTH
        slider.add(p, _pane(rng, keys if step % 9 else keys * 5, int(rng.integers(0, 40))))
        if step % 11 == 5:                       # a late batch into a pane the reads sealed
            slider.add(max(p - 2, 0), _pane(rng, keys, 3))
        if step % 3 == 0:
            slider.expire(now)                   # the reaper, between reads
        assert _close(_rows(slider.result(now)), _recombined(slider, now)), (step, now)
        now += WIDTH * (int(rng.integers(1, 3)) if step % 17 else panes // 2 + 1)


def test_state_stays_about_two_root_panes_tables():
    """3,600 panes held: the stacks hold O(√panes) combinations, not one per pane."""
    rng = np.random.default_rng(9)
    panes = 400
    slider = PaneSlider([oids.INT4], _specs()[:3], WindowOptions(sw_us=panes * WIDTH, pane_width_us=WIDTH))
    for p in range(panes + 50):
        t = GroupTable([oids.INT4], slider.specs)
        k = Col(rng.integers(0, 100, 50).astype(np.int32), None, oids.INT4)
        x = Col(rng.integers(0, 9, 50).astype(np.int32), None, oids.INT4)
        t.consume([k], [([], None), ([x], None), ([x], None)], 50)
        slider.add(p, t)
        slider.result((p + 1) * WIDTH)
    st = slider.stacks
    assert st is not None
    held = len(st.blocks) + len(st.back) + len(st.inner)
    assert held <= 3 * st.block + 2 < panes // 4


def test_slots_of_expired_keys_are_given_back(monkeypatch):
    """Every pane has keys of its own: once most slots belong to expired
    keys, the stacks start anew from the live panes (bounded state), and
    reads still equal recombining the live panes."""
    monkeypatch.setattr(two_stacks, "MIN_SLOTS", 16)
    rng = np.random.default_rng(11)
    panes = 9
    slider = PaneSlider([oids.INT4], _specs()[:3], WindowOptions(sw_us=panes * WIDTH, pane_width_us=WIDTH))
    most = 0
    for p in range(120):
        t = GroupTable([oids.INT4], slider.specs)
        k = Col((p * 1000 + rng.integers(0, 12, 30)).astype(np.int32), None, oids.INT4)
        x = Col(rng.integers(0, 9, 30).astype(np.int32), None, oids.INT4)
        t.consume([k], [([], None), ([x], None), ([x], None)], 30)
        slider.add(p, t)
        now = (p + 1) * WIDTH
        assert _close(_rows(slider.result(now)), _recombined(slider, now)), p
        assert slider.stacks is not None
        most = max(most, len(slider.stacks.slots))
    assert most <= 2 * 12 * (panes + 2) + 16           # never all 120 panes' keys
