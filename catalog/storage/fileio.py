"""The OS calls through which the WAL and checkpoint writers reach the disk.

A full disk or a failing device must fail the statement that needed the
write (53100 disk_full, 58030 io_error, with PostgreSQL's wording), never the
server, and never leave a half-written record that a later append follows.
Those paths are only testable if the failure can be made to happen on
demand: every write, fsync and truncate of durable files goes through the
:class:`FileLayer` returned by :func:`layer`, which a test swaps (:func:`use`)
for one that raises ``OSError(ENOSPC)`` or ``OSError(EIO)``.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path

from splitstream.protocol.errors import PgError

DISK_FULL = "53100"
IO_ERROR = "58030"

#: Buffered writes of many small parts are gathered into chunks of this size.
CHUNK = 1 << 20


class FileLayer:
    """The plain OS calls; a test subclass raises instead."""

    def write(self, fd: int, data: memoryview, path: Path) -> int:
        return os.write(fd, data)

    def writev(self, fd: int, data: list[memoryview], path: Path) -> int:
        return os.writev(fd, data)

    def fsync(self, fd: int, path: Path) -> None:
        os.fsync(fd)

    def datasync(self, fd: int, path: Path) -> None:
        """fdatasync: the WAL overwrites preallocated zeros, so it has no
        size or extent change to journal (cheaper than fsync)."""
        os.fdatasync(fd)

    def truncate(self, fd: int, size: int, path: Path) -> None:
        os.ftruncate(fd, size)


_layer = FileLayer()


def layer() -> FileLayer:
    return _layer


def use(new: FileLayer) -> FileLayer:
    """Install ``new`` (tests); returns the layer it replaces."""
    global _layer
    old, _layer = _layer, new
    return old


def storage_error(e: OSError, action: str, path: Path) -> PgError:
    """``could not <action> file "<path>": <strerror>`` with PostgreSQL's
    SQLSTATE: disk_full for a full disk or quota, io_error for the rest."""
    code = DISK_FULL if e.errno in (errno.ENOSPC, errno.EDQUOT) else IO_ERROR
    why = os.strerror(e.errno) if e.errno else str(e)
    return PgError(code, f'could not {action} file "{path}": {why}')


def write_fully(fd: int, data: bytes | bytearray | memoryview, path: Path) -> None:
    """Write all of ``data``: an unbuffered write may be short (a signal, a
    full disk); the OSError of a failed one propagates."""
    mv = memoryview(data).cast("B")
    lay = layer()
    while mv.nbytes:
        mv = mv[lay.write(fd, mv, path):]


#: buffers per writev call (below every system's IOV_MAX)
IOV_BATCH = 512


def writev_fully(fd: int, buffers: list[bytes | bytearray | memoryview], path: Path) -> None:
    """Write all of ``buffers``, in order, with as few system calls as
    possible (a COPY's WAL record is its column arrays, never joined into
    one copy).  A layer that replaces only :meth:`FileLayer.write` (a
    test's faults) gets every buffer through it instead."""
    views = [memoryview(b).cast("B") for b in buffers]
    lay = layer()
    if type(lay).write is not FileLayer.write and type(lay).writev is FileLayer.writev:
        for mv in views:
            write_fully(fd, mv, path)
        return
    views = [mv for mv in views if mv.nbytes]
    while views:
        done = lay.writev(fd, views[:IOV_BATCH], path)
        while views and done >= views[0].nbytes:
            done -= views[0].nbytes
            views.pop(0)
        if done:
            views[0] = views[0][done:]


def fsync(fd: int, path: Path) -> None:
    layer().fsync(fd, path)


def datasync(fd: int, path: Path) -> None:
    layer().datasync(fd, path)


class ChunkedWriter:
    """Many small parts written through the layer in chunks of :data:`CHUNK`
    (large parts go straight through, without a copy)."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd, self.path = fd, path
        self.buf = bytearray()

    def write(self, part: bytes | memoryview) -> None:
        n = memoryview(part).nbytes
        if n >= CHUNK:
            self.flush()
            write_fully(self.fd, part, self.path)
            return
        self.buf += part
        if len(self.buf) >= CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            write_fully(self.fd, self.buf, self.path)
            self.buf = bytearray()
