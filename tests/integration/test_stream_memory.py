"""Issue 4, memory: a stream holds its capacity times its row width, plus the
live string bytes, and nothing else -- however much is ingested through it.

Checked through splitstream.streams on a real server, after COPYs of several
times the capacity while a session-window scan listens (the ring buffer is
allocated and written only while a scan listens)."""
from __future__ import annotations

import threading
import time

import psycopg

CAP = 5000


def _listen(dsn: str, stream: str, out: dict) -> threading.Thread:
    """A session-window scan: keeps the ring in use until 3 s pass without rows."""
    def run() -> None:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("SET stream_session_timeout = '3s'")
            out["rows"] = c.execute(f"SELECT count(*) FROM {stream}").fetchone()[0]

    th = threading.Thread(target=run)
    th.start()
    time.sleep(0.4)
    return th


def _copy(conn: psycopg.Connection, stream: str, lines: list[str]) -> None:
    with conn.cursor() as cur:
        with cur.copy(f"COPY {stream} FROM STDIN (FORMAT csv)") as cp:
            cp.write("".join(lines))


def _stats(conn: psycopg.Connection, stream: str) -> dict:
    cur = conn.execute("SELECT capacity, fill, overwritten, bytes_held, row_width, string_bytes, null_flag_bytes, "
                       "rows_accepted FROM splitstream.streams WHERE name = %s", (stream,))
    names = [d.name for d in cur.description]
    return dict(zip(names, cur.fetchone()))


def test_int_stream_holds_capacity_times_row_width(ss_server, unique_name):
    s = unique_name("mem")
    with psycopg.connect(ss_server.dsn, autocommit=True) as c:
        c.execute(f"CREATE FOREIGN TABLE {s} (a int, b int, c bigint) SERVER stream OPTIONS (capacity '{CAP}')")
        out: dict = {}
        th = _listen(ss_server.dsn, s, out)
        seen = []
        for rnd in range(6):                       # 6 COPYs of 2 x capacity rows each
            base = rnd * 2 * CAP
            _copy(c, s, [f"{i % 7},{i},{i * 3}\n" for i in range(base, base + 2 * CAP)])
            seen.append(_stats(c, s))
        th.join()
    assert 0 < out["rows"] <= 12 * CAP             # a COPY larger than the ring overwrites its own rows
    width = 4 + 4 + 8 + 8                          # a, b, c and the implicit arrival_timestamp
    for st in seen:
        assert st["capacity"] == CAP and st["row_width"] == width
        assert st["string_bytes"] == 0 and st["null_flag_bytes"] == 0
        assert st["bytes_held"] == CAP * width     # nothing else, at 2x and at 12x the capacity
    last = seen[-1]
    assert last["fill"] == CAP and last["overwritten"] == 12 * CAP - CAP and last["rows_accepted"] == 12 * CAP


def test_string_stream_holds_row_width_plus_live_strings(ss_server, unique_name):
    s = unique_name("mems")
    longest = 40
    with psycopg.connect(ss_server.dsn, autocommit=True) as c:
        c.execute(f"CREATE FOREIGN TABLE {s} (k int, name text) SERVER stream OPTIONS (capacity '{CAP}')")
        out: dict = {}
        th = _listen(ss_server.dsn, s, out)
        seen = []
        for rnd in range(5):
            base = rnd * 3 * CAP
            # every 10th name is NULL (an empty unquoted CSV field)
            _copy(c, s, [f"{i},{'' if i % 10 == 0 else 'n' * (1 + i % longest)}\n"
                         for i in range(base, base + 3 * CAP)])
            seen.append(_stats(c, s))
        th.join()
    assert 0 < out["rows"] <= 15 * CAP
    width = 4 + 12 + 8                             # k, a string slot (offset + length), arrival_timestamp
    for st in seen:
        assert st["row_width"] == width
        # strings of at most the two runs a slot can still refer to
        assert 0 < st["string_bytes"] <= 2 * CAP * longest
        # NULL flags: one byte per slot, and only for the column that held NULLs
        assert st["null_flag_bytes"] == CAP
        assert st["bytes_held"] == CAP * width + st["string_bytes"] + st["null_flag_bytes"]
    # the string bytes do not grow with the volume ingested
    assert seen[-1]["string_bytes"] <= seen[1]["string_bytes"] * 1.5
