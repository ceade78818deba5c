"""A COPY's last slab is cut in two at a line end (``copy._halves``) to be
parsed on two threads: the halves are the slab's bytes, in order, each of
whole lines, whatever the CopyData pieces' boundaries."""
from __future__ import annotations

import random

from splitstream.executor.commands.copy import _halves


def _pieces(data: bytes, rng: random.Random) -> list:
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(0, 6)))) if len(data) > 1 else []
    out, prev = [], 0
    for c in cuts + [len(data)]:
        out.append(data[prev:c] if rng.random() < 0.5 else memoryview(data)[prev:c])
        prev = c
    return out


def test_halves_are_whole_lines_in_order() -> None:
    rng = random.Random(16)
    split = 0
    for _ in range(3000):
        lines = [b"%d,%d\n" % (rng.randint(0, 10 ** rng.randint(0, 9)), i) for i in range(rng.randint(1, 80))]
        data = b"".join(lines)
        got = _halves(_pieces(data, rng))
        if got is None:         # no line ends from the middle on but the last one
            assert data.find(b"\n", len(data) // 2) == len(data) - 1
            continue
        a, b = (b"".join(bytes(p) for p in part) for part in got)
        assert a + b == data and a.endswith(b"\n") and b.endswith(b"\n")
        assert len(a) >= len(data) // 2
        split += 1
    assert split > 2500


def test_a_long_line_across_many_pieces() -> None:
    data = b"1," + b"9" * 20000 + b"\n2,3\n"
    pieces = [data[i:i + 100] for i in range(0, len(data), 100)]
    a, b = (b"".join(bytes(p) for p in part) for part in _halves(pieces))
    assert (a, b) == (b"1," + b"9" * 20000 + b"\n", b"2,3\n")
