"""The reaper: drops the panes and TTL groups time has expired, in the
background, so a windowed view's state stays bounded between reads.

It never blocks ingest: a view's lock is only taken when free (inserters that
find it taken queue their staged batch and leave, Algorithm 4.3), and a view
busy with a read is simply visited on the next round.
"""
from __future__ import annotations

import logging
import threading
from typing import Callable, Iterable

from ..execution import clock

log = logging.getLogger("splitstream.streams")

#: seconds between rounds
INTERVAL = 0.5


class Reaper:
    """One daemon thread per stream manager, started with its first windowed view."""

    def __init__(self, views: Callable[[], Iterable]) -> None:
        self._views = views
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.rounds = 0

    def ensure_running(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="cv-reaper", daemon=True)
                self._thread.start()

    def reap_once(self, wait: float = 0.0) -> None:
        """One round over the windowed views at the clock's time."""
        now = clock.micros(clock.now())
        for cv in list(self._views()):
            if cv.windowed():
                try:
                    cv.reap(now, wait=wait)
                except Exception:  # noqa: BLE001 - a failing view must not stop the reaper for the others
                    log.exception('reaping continuous view "%s" failed', cv.rel.name)
        self.rounds += 1

    def _run(self) -> None:
        stop = threading.Event()
        while not stop.wait(INTERVAL):
            self.reap_once()
