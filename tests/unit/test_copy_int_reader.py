"""The compiled COPY reader (executor/backends/llvm/csv.py), as the COPY path uses it
for integer rows in CSV and text format, decides nothing on its own: for any
input, decoding with it gives the same columns, or the same error, as
decoding without it."""
from __future__ import annotations

import random

import numpy as np
import pytest

from splitstream.executor.backends.llvm import csv as csv_kernels
from splitstream.protocol import copy as copyformat
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import PgError

I2, I4, I8 = type_oids.INT2, type_oids.INT4, type_oids.INT8


def _native_reader(data: bytes, options, oids):
    """The COPY path's reader, compiled before use (it declines while compiling)."""
    return csv_kernels.decode(data, options, oids, wait=True)


def _decode(data: bytes, opts, oids, native):
    try:
        cols = copyformat.decode_copy(data, opts, oids, native=native)
    except PgError as e:
        return ("error", e.sqlstate, e.message, e.extra.get("line"))
    return [(v.dtype.str, v.tolist(), None if m is None else m.tolist()) for v, m in cols]


CASES = [
    (b"1,2,3\n-4,5,-6\n", [I4, I8, I2]),
    (b"1,,3\n,5,\n", [I4, I8, I2]),                 # CSV: empty unquoted field is NULL
    (b"32767,-32768\n", [I2, I2]),
    (b"32768,1\n", [I2, I2]),                       # int2 overflow: 22003 from the exact path
    (b"2147483647,-2147483648\n", [I4, I4]),
    (b"2147483648,0\n", [I4, I4]),
    (b"999999999999999999,-999999999999999999\n", [I8, I8]),   # 18 digits: read natively
    (b"9223372036854775807,-9223372036854775808\n", [I8, I8]),  # 19 digits: left to the general decoder
    (b"9223372036854775808,0\n", [I8, I8]),
    (b"007,-0\n", [I4, I4]),
    (b"+5,1\n", [I4, I4]),
    (b" 5,1\n", [I4, I4]),
    (b"5 ,1\n", [I4, I4]),
    (b"1,2\r\n3,4\r\n", [I4, I4]),
    (b"1,2\n3,4", [I4, I4]),                        # no final newline
    (b"1,2,3\n", [I4, I4]),                         # extra data
    (b"1\n", [I4, I4]),                             # missing data
    (b"1,x\n", [I4, I4]),
    (b"-,1\n", [I4, I4]),
    (b"1,2\n\n3,4\n", [I4, I4]),                    # empty line
    (b"\n\n", [I4]),
    (b'1,"2"\n', [I4, I4]),
    (b"0x1F,2\n", [I4, I4]),
    (b"1.0,2\n", [I4, I4]),
]


@pytest.mark.parametrize("data,oids", CASES)
@pytest.mark.parametrize("fmt", ["csv", "text"])
def test_same_answer_as_general_decoder(data, oids, fmt):
    opts = copyformat.parse_copy_options({"format": fmt})
    if fmt == "text":
        data = data.replace(b",", b"\t").replace(b"\t\t", b"\t\\N\t")
    assert _decode(data, opts, oids, _native_reader) == _decode(data, opts, oids, None)


def test_text_null_marker_and_backslashes():
    opts = copyformat.parse_copy_options({"format": "text"})
    for data in (b"\\N\t1\n2\t\\N\n", b"\\N\t1\n2\t\\Nx\n", b"\\x\t1\n", b"1\t2\n\\.\n3\t4\n", b"\\\\\t1\n"):
        assert _decode(data, opts, [I4, I8], _native_reader) == _decode(data, opts, [I4, I8], None)


def test_random_rows_both_threads():
    """A chunk large enough to be split over two threads, with NULLs and negatives."""
    rnd = random.Random(7)
    rows = []
    for _ in range(150000):
        rows.append(",".join("" if rnd.random() < 0.05 else str(rnd.randint(-10**9, 10**9)) for _ in range(5)))
    data = ("\n".join(rows) + "\n").encode()
    assert len(data) >= csv_kernels.PARALLEL_BYTES
    opts = copyformat.parse_copy_options({"format": "csv"})
    oids = [I4, I8, I4, I8, I4]
    native = _native_reader(data, opts, oids)
    assert native is not None
    assert _decode(data, opts, oids, _native_reader) == _decode(data, opts, oids, None)
    assert native[1][0].dtype == np.int64 and native[0][0].dtype == np.int32


def test_only_plain_layouts():
    csv, text = copyformat.parse_copy_options({"format": "csv"}), copyformat.parse_copy_options({"format": "text"})
    assert csv_kernels.supported([I2, I4, I8, type_oids.FLOAT8, type_oids.BOOL]) and csv_kernels.usable(csv) and csv_kernels.usable(text)
    assert not csv_kernels.supported([I4, type_oids.TEXT]) and not csv_kernels.supported([])
    assert not csv_kernels.usable(copyformat.parse_copy_options({"format": "csv", "null": "NULL"}))
    assert not csv_kernels.usable(copyformat.parse_copy_options({"format": "text", "null": ""}))


def _number(rnd: random.Random, kind: str) -> str:
    """A spelling of a number as clients write it, signed or not, sometimes
    one the reader must leave to the general decoder (or PostgreSQL refuses)."""
    digits = rnd.choice([1, 1, 2, 3, 4, 5, 9, 10, 15, 16, 18, 19])
    text = str(rnd.randint(0, 10 ** digits - 1)).zfill(rnd.choice([1, 1, 1, digits]))
    if kind == "f":
        text = rnd.choice([text, text + "." + str(rnd.randint(0, 10 ** 6)), "." + text, text + ".", "0." + text[:15]])
    text = rnd.choice(["", "", "-"]) + text
    if rnd.random() < 0.02:
        text = rnd.choice(["-", "--1", "+1", "-x", "1-", "-" + text + "e1", "- 1", "-0", "-.", "0x10"])
    return "" if rnd.random() < 0.05 else text


def _repr(cols):
    """Columns as text, so that -0.0 and 0.0 differ."""
    return cols if cols[0] == "error" else [(dt, [repr(x) for x in v], m) for dt, v, m in cols]


@pytest.mark.parametrize("seed", range(4))
def test_generated_signed_numbers(seed):
    """Random signed integers of every width and floats (leading zeros, -0,
    near-misses of the grammar, NULLs): each line and each chunk cut at
    random line ends decodes as the general decoder does it."""
    rnd = random.Random(seed)
    layout = [(I2, "i"), (I4, "i"), (I8, "i"), (type_oids.FLOAT8, "f"), (I8, "i")]
    oids = [o for o, _ in layout]
    lines = [",".join(_number(rnd, k) for _, k in layout) + "\n" for _ in range(3000)]
    opts = copyformat.parse_copy_options({"format": "csv"})
    for line in lines[:600]:
        data = line.encode()
        assert _repr(_decode(data, opts, oids, _native_reader)) == _repr(_decode(data, opts, oids, None)), data
    clean = [ln for ln in lines if _decode(ln.encode(), opts, oids, None)[0] != "error"]
    cuts = sorted(rnd.sample(range(1, len(clean)), 25))
    for a, b in zip([0] + cuts, cuts + [len(clean)]):
        data = "".join(clean[a:b]).encode()
        native = _native_reader(data, opts, oids)
        assert _repr(_decode(data, opts, oids, _native_reader)) == _repr(_decode(data, opts, oids, None))
        if native is not None:
            assert [repr(x) for x in native[3][0].tolist()] == [repr(x) for x in _decode(data, opts, oids, None)[3][1]]


def test_gathered_pieces_decode_as_the_bytes():
    """A slab joined from payloads cut anywhere (an uninitialised uint8 array,
    ``gather``) decodes as its bytes do, split over two threads when large."""
    rnd = random.Random(11)
    data = "".join(f"{rnd.randint(-99, 99)},{rnd.randint(0, 10**12)}\n" for _ in range(300000)).encode()
    assert len(data) >= csv_kernels.PARALLEL_BYTES
    cuts = sorted(rnd.sample(range(1, len(data)), 40))
    pieces = [memoryview(data)[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]
    joined = csv_kernels.gather(pieces)
    assert bytes(joined) == data
    opts = copyformat.parse_copy_options({"format": "csv"})
    got, ref = _native_reader(joined, opts, [I2, I8]), _native_reader(data, opts, [I2, I8])
    assert got is not None and ref is not None
    for (a, am), (b, bm) in zip(got, ref):
        assert np.array_equal(a, b) and am is None and bm is None
    assert _native_reader(joined[:-1], opts, [I2, I8]) is None         # not ending in a newline


def test_a_too_large_gather_gets_its_own_array():
    scratch = csv_kernels.scratch()
    assert csv_kernels.scratch() is scratch
    big = [bytes(csv_kernels.SCRATCH_BYTES), b"1"]
    assert len(csv_kernels.gather(big, scratch)) == csv_kernels.SCRATCH_BYTES + 1      # too large: its own array
