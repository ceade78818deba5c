"""One Bind/[Describe]/Execute/Sync cycle read straight from a network chunk.

Many small writers (issue 19) each send one prepared INSERT per round trip:
the chunk the server reads is exactly one cycle, and from one client it
differs from the last only in the parameter values.  :func:`split_cycle`
cuts such a chunk into its *shape* (every byte but the parameter values:
names, format codes, parameter count, result formats, the Describe, Execute
and Sync) and the raw parameter values, without building a message object.
The server answers a shape it has seen served by its ordinary path the same
way again (``server/session.py``, ``lean_raw``); anything else, including
any chunk this does not recognise, goes through the ordinary reader.
"""
from __future__ import annotations

import struct

from .bind_runs import value_spans

_I16 = struct.Struct("!h")
_I32 = struct.Struct("!i")
_HDR = struct.Struct("!ci")
_SYNC = b"S\0\0\0\x04"
#: chunks longer than this are left to the ordinary reader (its limits apply)
MAX_CYCLE_BYTES = 8192

Cycle = tuple[bytes, list[bytes | None]]


def split_cycle(buf: bytes) -> Cycle | None:
    """``(shape, raw parameter values)`` if ``buf`` is exactly one
    Bind/[Describe]/Execute/Sync cycle, well framed; else None.  The shape
    is self-delimiting (two names, counted formats, the parameter count),
    so equal shapes mean equal cycles up to the values."""
    n = len(buf)
    if n > MAX_CYCLE_BYTES or n < 20 or buf[0] != 0x42 or not buf.endswith(_SYNC):
        return None
    try:
        bend = 1 + _I32.unpack_from(buf, 1)[0]
        if bend > n - 10 or not _tail_ok(buf, bend, n - 5):
            return None
        a = buf.find(b"\0", 5, bend)
        pos = buf.find(b"\0", a + 1, bend) + 1 if a >= 0 else 0
        if pos <= 0:
            return None
        nf = _I16.unpack_from(buf, pos)[0]
        pos += 2 + 2 * nf
        count = _I16.unpack_from(buf, pos)[0] if nf >= 0 else -1
        pos += 2
        start = pos
        spans = value_spans(buf, pos, count, bend) if count >= 0 else None
    except struct.error:
        return None
    if spans is None:
        return None
    values, pos = spans
    params = [None if v is None else buf[v[0]:v[0] + v[1]] for v in values]
    return buf[5:start] + buf[pos:], params


def _tail_ok(buf: bytes, pos: int, sync: int) -> bool:
    """Between the Bind (ending at ``pos``) and the Sync (at ``sync``): an
    optional Describe, then an Execute, nothing else."""
    kind, ln = _HDR.unpack_from(buf, pos)
    if kind == b"D":
        pos += 1 + ln
        if ln < 4 or pos + 5 > sync:
            return False
        kind, ln = _HDR.unpack_from(buf, pos)
    return bool(kind == b"E" and ln >= 4 and pos + 1 + ln == sync)
