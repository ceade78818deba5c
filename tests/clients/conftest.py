"""Helpers shared by the client tests (psql runner, fresh servers)."""
from __future__ import annotations

import os
import shutil
import subprocess
from typing import Iterator

import pytest

from tests.support.servers import SplitstreamServer

PSQL = shutil.which("psql") or "/usr/lib/postgresql/15/bin/psql"


def client_env(**extra: str) -> dict[str, str]:
    """A clean environment for libpq tools: no PG* leaking in, C locale, UTC."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update({"LC_ALL": "C", "LANG": "C", "PGTZ": "UTC", "PGCONNECT_TIMEOUT": "10"})
    env.update(extra)
    return env


def psql(host: str, port: int, *commands: str, dbname: str = "postgres", cwd: str | None = None,
         password: str | None = None, check: bool = True, timeout: float = 60) -> str:
    """Run psql with each command as a -c; returns stdout (stderr folded in)."""
    argv = [PSQL, "-X", "-h", host, "-p", str(port), "-U", "postgres", "-d", dbname,
            "-v", "ON_ERROR_STOP=1", "-P", "pager=off"]
    for c in commands:
        argv += ["-c", c]
    env = client_env(**({"PGPASSWORD": password} if password else {}))
    res = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError(f"psql {commands!r} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    return res.stdout + res.stderr


@pytest.fixture(scope="module")
def fresh_ss(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SplitstreamServer]:
    """A splitstream server of this module's own (so listings hold only its objects)."""
    server = SplitstreamServer(tmp_path_factory.mktemp("ss_clients") / "data", extra_args=["--fsync", "off"])
    server.start()
    try:
        yield server
    finally:
        server.stop()
