"""Exactly-once batch keys for stream ingest (Spark's connector names its batches).

Streams are not transactional, so "record the batch id in a table in the
same transaction" does not work for them.  Instead a client names its batch
before a COPY (or INSERT) into a stream::

    SET splitstream.batch_key = '<query id>/<batch id>/<partition>/<chunk>';
    COPY events FROM STDIN (FORMAT csv);

The key is consumed by that one ingest.  It travels *inside the stream's WAL
record* (the ``batch_key`` field of its :class:`catalog.wal_records.StreamBatch`),
so the batch and its key are durable together or not at all.  The ledger of
applied keys is checked and extended under the database's checkpoint lock,
in WAL order, both live and during replay; a key seen before is skipped, so
a Spark task or micro-batch replayed after a failure (of Spark or of the
server) is applied once.  The ledger rides in the checkpoint next to the
views' group states, and keeps the most recent ``LEDGER_CAPACITY`` keys.

``splitstream_batch_applied(key)`` tells a client whether a key was applied
(so a replayed chunk need not even be sent).  The ledger itself lives on the
:class:`StreamManager`, whose insert, replay and checkpoint paths consult it.
"""
from __future__ import annotations

import collections

from splitstream.protocol.errors import PgError

from ...settings import SPARK_BATCH_KEY as KEY_SETTING
LEDGER_CAPACITY = 1 << 18
MAX_KEY_LEN = 512

INVALID = "22023"          # invalid_parameter_value


class Ledger:
    def __init__(self) -> None:
        self.keys: collections.OrderedDict[str, None] = collections.OrderedDict()

    def __contains__(self, key: str) -> bool:
        return key in self.keys

    def add(self, key: str) -> None:
        self.keys[key] = None
        while len(self.keys) > LEDGER_CAPACITY:
            self.keys.popitem(last=False)

    def admit(self, key: str) -> bool:
        """True (and remember it) if the key is new; call in WAL order."""
        if key in self.keys:
            return False
        self.add(key)
        return True


def check_key(key: str) -> None:
    if len(key) > MAX_KEY_LEN:
        raise PgError(INVALID, f"{KEY_SETTING} is longer than {MAX_KEY_LEN} characters")
