"""Telling a torn WAL tail from corruption, and salvaging a damaged WAL.

A crash can tear only the record being written: the last one.  A damaged
record with an intact one after it means the disk (or something else) broke
acknowledged data: replay must not skip it silently, nor go on after it
(later records may depend on it).  "Intact after it" is found by
resynchronising: every record body starts with a list of operations, each a
record tagged ``op.``, so candidate frame starts are found with a byte
search and confirmed by their length and checksum.

Segments are preallocated (zero-filled ahead of the writer, ``wal.py``), so
a segment's log ends where a frame header of zeros starts (no record has an
empty body): :func:`zero_header`.  Zeros with an intact record after them
are damage like any other.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from . import records

_HDR = struct.Struct("!II")
#: where, relative to a frame's start, an operation list's bytes sit: the
#: list tag, the record tag, and the "op." prefix of the operation's tag
_LIST_AT, _RECORD_AT, _OP_AT = _HDR.size, _HDR.size + 5, _HDR.size + 8
_OP = b"op."


def frame_end(data: bytes, pos: int) -> int:
    """The end of the intact record framed at ``pos``, or 0."""
    if pos + _HDR.size > len(data):
        return 0
    ln, crc = _HDR.unpack_from(data, pos)
    if ln == 0:
        return 0           # the preallocated zeros past the end (no record is empty)
    end: int = pos + _HDR.size + ln
    if end > len(data) or zlib.crc32(memoryview(data)[pos + _HDR.size:end]) != crc:
        return 0
    return end


def zero_header(data: bytes, pos: int) -> bool:
    """Whether the frame header at ``pos`` is zeros (what is left of it, at
    the file's end): where the log of a preallocated segment ends."""
    return not any(data[pos:pos + _HDR.size])


def resync(data: bytes, after: int) -> int | None:
    """The first offset past ``after`` where an intact record starts."""
    i = data.find(_OP, after + 1 + _OP_AT)
    while i >= 0:
        q = i - _OP_AT
        if data[q + _LIST_AT] == 0x6C and data[q + _RECORD_AT] == 0x52 and frame_end(data, q):   # b"l", b"R"
            return q
        i = data.find(_OP, i + 1)
    return None


def log_end(data: bytes, pos: int) -> bool:
    """Whether the log of a segment ends cleanly at ``pos``: zeros, with no
    intact record after them."""
    return zero_header(data, pos) and resync(data, pos) is None


def first_intact(data: bytes, pos: int) -> int | None:
    """``pos`` if a record starts there intact, else the next one that does."""
    return pos if frame_end(data, pos) else resync(data, pos)


@dataclass
class Damage:
    """A record of segment ``gen`` (file ``path``, read as ``data``) that is
    not intact, at byte ``offset``; ``reason`` when known (else worked out)."""

    gen: int
    path: Path
    offset: int
    data: bytes
    reason: str = ""

    def why(self) -> str:
        if self.reason:
            return self.reason
        if self.offset + _HDR.size > len(self.data):
            return "incomplete record header"
        if zero_header(self.data, self.offset):
            return "zeroed record header"
        ln = _HDR.unpack_from(self.data, self.offset)[0]
        if self.offset + _HDR.size + ln > len(self.data):
            return f"record length {ln} runs past the end of the file"
        return "incorrect record checksum"


class WalCorruption(records.FormatError):
    """Damage before the end of the WAL: the server refuses to start.
    ``because``: why it cannot be a write torn by a crash."""

    def __init__(self, damage: Damage, because: str = "intact records follow it") -> None:
        data_dir = damage.path.parent.parent
        super().__init__(
            f'invalid WAL record in file "{damage.path}" at byte offset {damage.offset}: {damage.why()}; '
            f"{because}, so this is corruption, not a torn write",
            hint=f'Run "splitstream recover --data-dir {data_dir}" to keep everything before this record '
                 "(it reports what it drops), or restore the data directory from a backup.")
        self.damage = damage


def segment_records(data: bytes) -> int | None:
    """The offset of a segment's first record, or None for a segment torn
    while its header was written (nothing was logged in it)."""
    return None if len(data) < records.HEADER_SIZE else records.HEADER_SIZE


def damage_is_tail(damage: Damage, later: list[Path]) -> bool:
    """Whether nothing intact follows ``damage``, in its segment or later ones."""
    if resync(damage.data, damage.offset) is not None:
        return False
    for path in later:
        data = path.read_bytes()
        pos = segment_records(data)
        if pos is not None and first_intact(data, pos) is not None:
            return False
    return True


def count_intact(data: bytes, pos: int) -> tuple[int, int]:
    """How many intact records start at or after ``pos`` (resynchronising
    over damage), and how many bytes from ``pos`` hold anything (the
    preallocated zeros after both are not counted): what cutting the
    segment at ``pos`` drops."""
    n, end = 0, pos
    q = first_intact(data, pos)
    while q is not None:
        n += 1
        end = frame_end(data, q)
        q = first_intact(data, end)
    return n, max(end, len(data.rstrip(b"\0")), pos) - pos
