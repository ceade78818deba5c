"""The compiled CSV parser (executor/backends/llvm/csv.py) against the general COPY
decoder: whatever it accepts must decode to exactly the same columns, and
anything doubtful must be declined (None), never guessed."""
from __future__ import annotations

import random

import numpy as np
import pytest

from splitstream.executor.backends.llvm import csv as csv_kernels
from splitstream.protocol import copy as copyformat
from splitstream.protocol import oids as type_oids

CSV = copyformat.parse_copy_options({"format": "csv"})
OIDS = [type_oids.INT4, type_oids.INT2, type_oids.INT8, type_oids.FLOAT8, type_oids.BOOL]


def _same(got, ref) -> None:
    assert len(got) == len(ref)
    for (a, am), (b, bm) in zip(got, ref):
        assert a.dtype == b.dtype and len(a) == len(b)
        an = np.zeros(len(a), bool) if am is None else am
        bn = np.zeros(len(b), bool) if bm is None else bm
        assert np.array_equal(an, bn)
        assert np.array_equal(a[~an], b[~bn])
        if a.dtype.kind == "f":   # -0.0 keeps its sign, as float8in's does
            assert np.array_equal(np.signbit(a[~an]), np.signbit(b[~bn]))


def _row(rng: random.Random) -> str:
    def num(digits: int) -> str:
        return ("-" if rng.random() < 0.3 else "") + str(rng.randrange(10 ** rng.randint(1, digits)))

    def flt() -> str:
        return rng.choice([num(6), num(6) + "." + str(rng.randrange(10 ** rng.randint(0, 6))).zfill(rng.randint(1, 6)),
                           "0", "-0", "0.0", "-0.5", ".25", "7.", "123456789012345", "0.00000000000001"])

    cells = [num(9), num(4), num(18), flt(), rng.choice(["t", "f", "true", "false"])]
    return ",".join("" if rng.random() < 0.1 else c for c in cells)


def test_random_plain_rows_decode_exactly() -> None:
    rng = random.Random(7)
    data = ("\n".join(_row(rng) for _ in range(5000)) + "\n").encode()
    got = csv_kernels.decode(data, CSV, OIDS, wait=True)
    assert got is not None
    _same(got, copyformat.decode_copy(data, CSV, OIDS))


@pytest.mark.parametrize("line", [
    "1,2,3,4.5,t,9",            # too many fields
    "1,2,3,4.5",                # too few
    '1,2,3,"4.5",t',            # quoted
    "1,2,3,1e5,t",              # exponent
    "1,2,3,inf,t",
    "1,2,3,NaN,t",
    "1,2,3,1234567890123456,t",  # 16 digits
    "1,2,3,0x10,t",
    "1,2,3, 4.5,t",             # whitespace
    "1,2,3,+4.5,t",
    "1234567890,2,3,4.5,t",     # int4 with 10 digits
    "1,99999,3,4.5,t",          # int2 out of range
    "1,2,3,4.5,yes",
    "1,2,3,4.5,tru",
    "1,2,3,4.5,truex",
    "1,2,3,4.5,t\r",
    "-,2,3,4.5,t",
    "1,2,3,.,t",
    "1,2,3,4.5.6,t",
])
def test_doubtful_input_is_declined(line: str) -> None:
    data = ("1,2,3,4.5,t\n" + line + "\n").encode()
    assert csv_kernels.decode(data, CSV, OIDS, wait=True) is None


def test_layouts_and_options_outside_the_fast_path() -> None:
    data = b"1,2\n"
    assert csv_kernels.decode(data, CSV, [type_oids.INT4, type_oids.TEXT], wait=True) is None
    assert csv_kernels.decode(b"1,2", CSV, [type_oids.INT4, type_oids.INT4], wait=True) is None           # no final newline
    text = copyformat.parse_copy_options({"format": "text"})
    assert csv_kernels.decode(b"1\t\\N\n", text, [type_oids.INT4, type_oids.INT4], wait=True) is None      # text NULLs: general path
    assert csv_kernels.decode(b"1\t\n", text, [type_oids.INT4, type_oids.INT4], wait=True) is None          # '' is no integer
    nul = copyformat.parse_copy_options({"format": "csv", "null": "NULL"})
    assert csv_kernels.decode(data, nul, [type_oids.INT4, type_oids.INT4], wait=True) is None


def test_text_format_numbers_and_booleans() -> None:
    text = copyformat.parse_copy_options({"format": "text"})
    data = b"".join(b"%d\t%d.25\t%s\n" % (i, -i, b"tf"[i % 2:i % 2 + 1]) for i in range(5000))
    got = csv_kernels.decode(data, text, [type_oids.INT4, type_oids.FLOAT8, type_oids.BOOL], wait=True)
    assert got is not None
    _same(got, copyformat.decode_copy(data, text, [type_oids.INT4, type_oids.FLOAT8, type_oids.BOOL]))


def test_other_delimiter_and_all_null_column() -> None:
    opts = copyformat.parse_copy_options({"format": "csv", "delimiter": "|"})
    data = b"".join(b"%d||%d.5\n" % (i, -i) for i in range(3000))
    got = csv_kernels.decode(data, opts, [type_oids.INT8, type_oids.INT4, type_oids.FLOAT8], wait=True)
    assert got is not None and got[1][1] is not None and got[1][1].all()
    _same(got, copyformat.decode_copy(data, opts, [type_oids.INT8, type_oids.INT4, type_oids.FLOAT8]))
