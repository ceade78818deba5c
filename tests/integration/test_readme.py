"""The README's quickstart runs as written (issue 14 item 8): every ```sql
block, in order, through real psql against a fresh server, from the
repository's root (where the README says to run it), stopping at the first
error; and every ``psql ... -c '...'`` line of its ```sh blocks.  A block
preceded by ``<!-- readme-test: skip (why) -->`` is left out (the Spark
example: tests/spark/test_example.py runs that job); the other fenced
languages (python, plain) are not shell sessions for psql."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PSQL = shutil.which("psql") or "/usr/lib/postgresql/15/bin/psql"
_BLOCK = re.compile(r"(?P<skip><!-- readme-test: skip[^>]*-->\s*\n)?```(?P<lang>[a-z]*)\n(?P<body>.*?)```", re.S)


def readme_blocks() -> list[tuple[str, str]]:
    """(language, body) of every fenced block the test runs, in README order."""
    return [(m["lang"], m["body"]) for m in _BLOCK.finditer(README.read_text()) if not m["skip"]]


def psql_lines(sh: str) -> list[list[str]]:
    """The psql commands of a shell block that run something (``-c``)."""
    out = []
    for line in sh.splitlines():
        line = line.split(" #")[0].strip()
        if line.startswith("psql ") and " -c " in line:
            out.append(shlex.split(line))
    return out


def _psql(server, args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update({"LC_ALL": "C", "PGCONNECT_TIMEOUT": "10"})
    cmd = [PSQL, "-X", "-v", "ON_ERROR_STOP=1", "-P", "pager=off", "-d", server.dsn, *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)


def _connection_args_dropped(cmd: list[str]) -> list[str]:
    """A README psql command without its host/port/user (the test server's dsn replaces them)."""
    out, skip = [], False
    for a in cmd[1:]:
        if skip:
            skip = False
        elif a in ("-h", "-p", "-U", "-d"):
            skip = True
        else:
            out.append(a)
    return out


def test_readme_has_the_quickstart():
    sql = [body for lang, body in readme_blocks() if lang == "sql"]
    assert sql and any("\\copy events FROM 'examples/events.csv'" in b for b in sql)
    assert (ROOT / "examples" / "events.csv").exists()


def test_readme_runs_as_written(ss_server_factory):
    server = ss_server_factory()
    ran = 0
    for lang, body in readme_blocks():
        if lang == "sql":
            res = _psql(server, ["-f", "-"], stdin=body)
            assert res.returncode == 0 and "ERROR" not in res.stderr, f"README block failed:\n{body}\n{res.stderr}"
            ran += 1
        elif lang == "sh":
            for cmd in psql_lines(body):
                res = _psql(server, _connection_args_dropped(cmd))
                assert res.returncode == 0, f"README command failed: {shlex.join(cmd)}\n{res.stderr}"
                ran += 1
    assert ran >= 1
    # the quickstart's view saw the two INSERTed events and the CSV's six
    res = _psql(server, ["-At", "-c", "SELECT sum(calls) FROM cost_by_zip"])
    assert res.stdout.strip() == "8", res.stdout + res.stderr


@pytest.mark.parametrize("sh, expected", [
    ("psql -h 127.0.0.1 -p 5433 -U postgres", []),
    ("psql -h 127.0.0.1 -p 5433 -U postgres -c 'SELECT 1'   # note", [["psql", "-h", "127.0.0.1", "-p", "5433", "-U",
                                                                   "postgres", "-c", "SELECT 1"]]),
])
def test_psql_lines(sh, expected):
    assert psql_lines(sh) == expected
