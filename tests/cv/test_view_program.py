"""A continuous view's program is new data built from its planned tree.

The planned tree may be a cached plan shared by sessions and threads, so
compiling a view must leave it exactly as planned (no replaced children, no
dropped Sort, no join swapped for another, no attributes hung on it).  Each
stream pipeline is named by a fingerprint that is the same in every process
and does not depend on where the pipeline is listed, so saved state can find
its pipeline after a re-plan."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from splitstream.executor.execution import plans
from splitstream.executor.stream import continuous
from tests.support.engine import open_engine, plain_session

SETUP = [
    "CREATE TABLE d (k int, name text)",
    "INSERT INTO d VALUES (1, 'a'), (2, 'b'), (3, 'c')",
    "CREATE FOREIGN TABLE s1 (k int, x int) SERVER stream",
    "CREATE FOREIGN TABLE s2 (k int, y int) SERVER stream",
]
VIEWS = {
    "joined": "SELECT d.name, count(*) AS n, sum(x) AS sx FROM s1 JOIN d ON s1.k = d.k GROUP BY d.name ORDER BY 1",
    "crossed": "SELECT count(*) AS n FROM s1, d WHERE s1.x > d.k",
    "sub": "SELECT k, count(*) AS n FROM s1 GROUP BY k HAVING count(*) >= (SELECT count(*) FROM s2) ORDER BY k",
    "ab": "SELECT a.k, a.n, b.sy FROM (SELECT k, count(*) AS n FROM s1 GROUP BY k) a "
          "JOIN (SELECT k, sum(y) AS sy FROM s2 GROUP BY k) b ON a.k = b.k",
    "ba": "SELECT a.k, a.n, b.sy FROM (SELECT k, sum(y) AS sy FROM s2 GROUP BY k) b "
          "JOIN (SELECT k, count(*) AS n FROM s1 GROUP BY k) a ON a.k = b.k",
}


def _fingerprints(data_dir: str) -> dict[str, list[str]]:
    with open_engine(data_dir) as e:
        s = plain_session(e)
        for q in SETUP:
            s.execute_sql(q)
        for name, q in VIEWS.items():
            s.execute_sql(f"CREATE VIEW {name} AS {q}")
        out = {}
        for cv in e.streams.views.values():
            out[cv.rel.name] = [fp for fp, _pipe in continuous.pipeline_fingerprints(cv)]
        return out


def test_compiling_a_view_leaves_its_planned_tree_unchanged(tmp_path, monkeypatch) -> None:
    seen = []
    compile_view = continuous.compile_view

    def recording(rel, plan, ctx, reuse=None):
        before = plans.canonical(plan)
        program = compile_view(rel, plan, ctx, reuse)
        seen.append((rel.name, before, plans.canonical(plan), program, plan))
        return program

    monkeypatch.setattr(continuous, "compile_view", recording)
    with open_engine(str(tmp_path / "data")) as e:
        s = plain_session(e)
        for q in SETUP:
            s.execute_sql(q)
        for name, q in VIEWS.items():
            s.execute_sql(f"CREATE VIEW {name} AS {q}")
        s.execute_sql("INSERT INTO s1 VALUES (1, 5), (2, 7), (2, 1)")
        s.execute_sql("INSERT INTO s2 VALUES (2, 4)")
        assert sorted(s.execute_sql("SELECT * FROM joined").batch.rows()) == [("a", 1, 5), ("b", 2, 8)]
        assert s.execute_sql("SELECT * FROM crossed").batch.rows() == [(6,)]
        assert s.execute_sql("SELECT * FROM ab").batch.rows() == [(2, 2, 4)]
    assert {name for name, *_ in seen} == set(VIEWS)
    for name, before, after, program, plan in seen:
        assert after == before, f"{name}: the planned tree changed"
        assert program.upper is not plan, name


def test_pipeline_fingerprints_are_stable_and_independent_of_order(tmp_path) -> None:
    here = _fingerprints(str(tmp_path / "one"))
    assert len(set(here["ab"])) == 2 and len(set(here["ba"])) == 2
    assert not set(here["ab"]) & set(here["ba"])      # a pipeline's name includes its view
    script = ("import json, sys; from tests.cv.test_view_program import _fingerprints; "
              "print(json.dumps(_fingerprints(sys.argv[1])))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "two")], env=env, check=True,
                         capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert json.loads(out.stdout.strip().splitlines()[-1]) == here
