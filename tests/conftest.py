"""Fixtures shared by the whole suite (their names are a contract).

* ``pg15`` / ``pg_conn``: a private PostgreSQL 15, the oracle for differential tests.
* ``ss_server`` / ``ss_conn``: one splitstream server shared by the session,
  because starting a server per test would dominate the suite's run time.
* ``ss_server_factory``: fresh servers on fresh data dirs, for tests that
  restart, crash or configure (password, TLS) a server.
* ``unique_name``: collision-free identifiers, since tests share ``ss_server``
  and ``pg15`` and must not trip over each other's tables.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import itertools
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import psycopg
import pytest

from tests.support.servers import Postgres15, SplitstreamServer, postgres15_available


# -- one copy of each module ---------------------------------------------------

ROOMS = ("protocol", "server", "catalog", "executor", "connectors")


class BareRoomImports(importlib.abc.MetaPathFinder):
    """Refuses ``import executor`` & co. for the whole test session.

    The repository root is on sys.path, so a bare room name would import the
    folder a second time beside ``splitstream.executor``: a monkeypatch of
    "executor.copy.X" would then patch the duplicate and silently test nothing.
    """

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name.split(".")[0] in ROOMS:
            raise ImportError(f"import splitstream.{name}, not {name}: the rooms exist only under splitstream")
        return None


if not any(isinstance(f, BareRoomImports) for f in sys.meta_path):
    sys.meta_path.insert(0, BareRoomImports())

MARKERS = {
    "slow": "long-running test; deselect with -m 'not slow'",
    "spark": "needs pyspark and a JVM",
    "crash": "kills the server process (SIGKILL) and checks recovery",
}


def pytest_configure(config: pytest.Config) -> None:
    for name, doc in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")


# -- PostgreSQL 15 -----------------------------------------------------------

@pytest.fixture(scope="session")
def pg15() -> Iterator[Postgres15]:
    """A running PostgreSQL 15 for the whole session (skips only if not installed)."""
    if not postgres15_available():
        pytest.skip("PostgreSQL 15 binaries not installed (/usr/lib/postgresql/15/bin)")
    server = Postgres15().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_conn(pg15: Postgres15) -> Iterator[psycopg.Connection]:
    """Autocommit connection to pg15. Dropping what the test creates is the test's job."""
    conn = psycopg.connect(pg15.dsn, autocommit=True, connect_timeout=10)
    try:
        yield conn
    finally:
        conn.close()


# -- splitstream ---------------------------------------------------------------

def _start_or_fail(server: SplitstreamServer, timeout: float = 30.0) -> SplitstreamServer:
    """Start a server; turn a startup failure into a readable test error."""
    try:
        return server.start(timeout=timeout)
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def ss_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SplitstreamServer]:
    """One splitstream server for the whole session, on a temp data dir."""
    server = SplitstreamServer(tmp_path_factory.mktemp("ss_session") / "data")
    _start_or_fail(server)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def ss_server_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., SplitstreamServer]]:
    """``make(**kwargs) -> SplitstreamServer``: fresh, started servers, all stopped at teardown.

    kwargs go to SplitstreamServer (password, tls_cert, tls_key, extra_args,
    env); ``data_dir`` may be given to reuse a directory, ``start=False``
    returns the server unstarted.
    """
    servers: list[SplitstreamServer] = []

    def make(*, data_dir: Path | None = None, start: bool = True, **kwargs: Any) -> SplitstreamServer:
        if data_dir is None:
            data_dir = tmp_path_factory.mktemp("ss") / "data"
        server = SplitstreamServer(data_dir, **kwargs)
        servers.append(server)
        if start:
            _start_or_fail(server)
        return server

    try:
        yield make
    finally:
        for server in servers:
            server.stop()


@pytest.fixture
def ss_conn(ss_server: SplitstreamServer) -> Iterator[psycopg.Connection]:
    """Autocommit psycopg connection to the session's splitstream server."""
    conn = psycopg.connect(ss_server.dsn, autocommit=True, connect_timeout=10)
    try:
        yield conn
    finally:
        conn.close()


# -- naming --------------------------------------------------------------------

_name_counter = itertools.count(1)


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Callable[..., str]:
    """``unique_name(prefix='t') -> 't_<testname>_<n>'``: safe, lowercase, <= 63 bytes.

    The counter is global to the session, so parametrised tests (whose ids
    may sanitise to the same text) still never collide.
    """
    base = re.sub(r"[^a-z0-9_]+", "_", request.node.name.lower())
    base = re.sub(r"^test_?", "", base).strip("_")[:40] or "x"

    def make(prefix: str = "t") -> str:
        prefix = re.sub(r"[^a-z0-9_]+", "_", prefix.lower()) or "t"
        if not prefix[0].isalpha() and prefix[0] != "_":
            prefix = "t" + prefix
        suffix = f"_{next(_name_counter)}"
        return f"{prefix}_{base}"[: 63 - len(suffix)] + suffix

    return make
