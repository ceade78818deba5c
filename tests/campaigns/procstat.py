"""What a campaign watches on the server process: open descriptors, threads, memory.

Read from /proc so the campaigns see the server as the kernel does (a leak
of a socket, a thread or buffers shows here whatever the server believes).
"""
from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class ProcStat:
    """One sample of a process: descriptors, threads, resident memory."""

    fds: int
    threads: int
    rss_kib: int

    def __str__(self) -> str:
        return f"fds={self.fds} threads={self.threads} rss={self.rss_kib / 1024:.1f}MiB"


def sample(pid: int) -> ProcStat:
    """The process's current counts (raises OSError if it is gone)."""
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    threads = len(os.listdir(f"/proc/{pid}/task"))
    rss = 0
    with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
                break
    return ProcStat(fds, threads, rss)


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
