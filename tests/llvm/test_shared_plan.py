"""A planned tree is shared: one cached plan executed by several threads at
once gives each its own answer.  Run state (row counts, hash join builds,
subquery results) lives in each execution's run object, and the LLVM
backend's compiled sink serves one execution at a time (a concurrent one
runs on the vector path)."""
from __future__ import annotations

import threading

from splitstream.catalog.storage.database import Transaction
from splitstream.executor.context import ExecContext, SessionInfo

from .conftest import Sql, canon


def test_one_plan_run_by_threads_at_once(sql: Sql) -> None:
    t, d = sql.name("t"), sql.name("d")
    sql(f"CREATE TABLE {t} (k int, x int)")
    sql(f"INSERT INTO {t} SELECT i % 97, i FROM generate_series(1, 60000) AS i")
    sql(f"CREATE TABLE {d} (k int, name text)")
    sql(f"INSERT INTO {d} SELECT i, 'n' || i FROM generate_series(0, 96) AS i")
    sql.backend("llvm")
    query = (f"SELECT {t}.k, count(*), sum(x), max(name) FROM {t} JOIN {d} ON {t}.k = {d}.k "
             f"WHERE x > (SELECT min(x) FROM {t}) GROUP BY {t}.k")
    expected = canon(sql.rows(query))
    plan = sql.session.prepare(query, []).handle.plan
    engine = sql.engine
    results: list = []
    errors: list = []

    def run() -> None:
        try:
            for _ in range(4):
                ctx = ExecContext(db=engine.db, txn=Transaction(engine.db, implicit=True),
                                  session=SessionInfo(settings={"executor_backend": "llvm"}), engine=engine)
                results.append(canon(plan.execute(ctx).rows()))
        except Exception as e:          # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert len(results) == 12 and all(r == expected for r in results)
