"""In-process engine fixtures for the LLVM backend tests (no sockets: fast)."""
from __future__ import annotations

import itertools

import pytest

from splitstream.executor.context import SessionInfo
from splitstream.executor.engine import Engine

_n = itertools.count(1)


class Sql:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.session = engine.new_session(SessionInfo(settings={}))

    def __call__(self, sql: str):
        return self.session.execute_sql(sql)

    def rows(self, sql: str) -> list[tuple]:
        r = self.session.execute_sql(sql)
        return r.batch.rows() if r.batch is not None else []

    def lines(self, sql: str) -> list[str]:
        return [r[0] for r in self.rows(sql)]

    def backend(self, mode: str) -> None:
        self.session.execute_sql(f"SET executor_backend = '{mode}'")

    @staticmethod
    def name(prefix: str) -> str:
        return f"{prefix}_{next(_n)}"


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    e = Engine(str(tmp_path_factory.mktemp("llvm") / "data"), fsync=False)
    e.open()
    yield e
    e.close()


@pytest.fixture
def sql(engine) -> Sql:
    return Sql(engine)


def values(rows) -> str:
    def lit(v):
        if v is None:
            return "NULL"
        return repr(v)

    return ", ".join("(" + ", ".join(lit(v) for v in r) + ")" for r in rows)


def canon(rows) -> list:
    """Order-independent, NaN-free comparison form."""
    out = []
    for r in rows:
        out.append(tuple(float(v) if isinstance(v, float) else v for v in r))
    return sorted(out, key=lambda r: tuple((v is None, str(type(v)), v if v is not None else 0) for v in r))


@pytest.fixture(autouse=True, scope="session")
def _verify_ir():
    from splitstream.executor.backends.llvm import jit

    jit.VERIFY = True
    yield
