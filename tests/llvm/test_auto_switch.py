"""Under executor_backend = 'auto' a continuous view's insert pipeline starts
on the vector backend and switches to compiled code once compiling pays;
read from EXPLAIN ANALYZE over the wire, never from timings."""
from __future__ import annotations

import random
import re
import time

import psycopg


def _backend_line(conn, view: str) -> str:
    lines = [r[0] for r in conn.execute(f"EXPLAIN ANALYZE SELECT * FROM {view}").fetchall()]
    found = [line for line in lines if line.strip().startswith("Backend:")]
    assert found, "\n".join(lines)
    return found[0]


def _copy(conn, stream: str, rows) -> None:
    with conn.cursor() as cur:
        with cur.copy(f"COPY {stream} FROM STDIN (FORMAT csv)") as cp:
            cp.write("".join(f"{a},{b},{c}\n" for a, b, c in rows))


def test_auto_switches_from_vector_to_llvm(ss_server_factory):
    server = ss_server_factory()           # fresh process: empty module cache
    with psycopg.connect(server.dsn, autocommit=True, connect_timeout=10) as conn:
        conn.execute("SET executor_backend = 'auto'")
        conn.execute("CREATE FOREIGN TABLE ysb_ev (campaign int, etype int, val int) SERVER stream")
        conn.execute("CREATE VIEW ysb_v AS SELECT campaign, count(*), sum(val) FROM ysb_ev WHERE etype = 0 GROUP BY campaign")
        rnd = random.Random(5)
        expected: dict = {}

        def batch(n):
            rows = [(rnd.randrange(500), rnd.randrange(3), rnd.randrange(100)) for _ in range(n)]
            for c, e, v in rows:
                if e == 0:
                    cnt, s = expected.get(c, (0, 0))
                    expected[c] = (cnt + 1, s + v)
            return rows

        _copy(conn, "ysb_ev", batch(20_000))
        first = _backend_line(conn, "ysb_v")
        assert first.split()[1].rstrip(",") == "vector", first
        deadline = time.monotonic() + 45
        line = first
        while "llvm" not in line.split(";")[0] and time.monotonic() < deadline:
            _copy(conn, "ysb_ev", batch(20_000))
            line = _backend_line(conn, "ysb_v")
        assert re.search(r"Backend: llvm (generic|specialised)", line), line
        assert re.search(r"compile=\d+(\.\d+)? ms", line), line
        m = re.search(r"\+(\d+) on vector before the switch", line)
        assert m and int(m.group(1)) >= 20_000, line
        # exact result across the switch
        got = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT * FROM ysb_v").fetchall()}
        assert got == expected
