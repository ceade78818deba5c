"""pgbench custom scripts in all three query modes, and pgjdbc through a single-file Java program."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import client_env, psql

PGBENCH = shutil.which("pgbench") or "/usr/lib/postgresql/15/bin/pgbench"
JAVA = shutil.which("java")
PGJDBC = Path("/usr/share/java/postgresql.jar")
JAVA_DIR = Path(__file__).parent / "java"

SCRIPTS = {
    "select": "\\set id random(1, 100000)\nSELECT :id AS x, :id * 2 AS y;\n",
    "insert": "\\set id random(1, 1000000)\nINSERT INTO {t} VALUES (:id, :id % 10, 'x');\n",
    "txn": ("\\set id random(1, 1000000)\nBEGIN;\nINSERT INTO {t} VALUES (:id, 1, 'y');\n"
            "SELECT count(*) FROM {t} WHERE k = :id % 10;\nUPDATE {t} SET k = k + 1 WHERE id = :id;\nEND;\n"),
}
TRANSACTIONS = {"select": 750, "insert": 200, "txn": 50}  # per client


@pytest.mark.parametrize("mode", ["simple", "extended", "prepared"])
def test_pgbench_custom_scripts(fresh_ss, mode, tmp_path, unique_name):
    t = unique_name("bench")
    psql(fresh_ss.host, fresh_ss.port, f"CREATE TABLE {t} (id int, k int, s text)")
    for name, body in SCRIPTS.items():
        f = tmp_path / f"{name}.sql"
        f.write_text(body.format(t=t))
        n = TRANSACTIONS[name]
        res = subprocess.run([PGBENCH, "-n", "-f", str(f), "-M", mode, "-c", "2", "-j", "2", "-t", str(n),
                              "-h", fresh_ss.host, "-p", str(fresh_ss.port), "-U", "postgres", "postgres"],
                             capture_output=True, text=True, env=client_env(), timeout=120)
        out = res.stdout + res.stderr
        assert res.returncode == 0, out
        assert f"number of transactions actually processed: {2 * n}/{2 * n}" in out, out
        assert re.search(r"number of failed transactions: 0 ", out), out
    count = psql(fresh_ss.host, fresh_ss.port, f"SELECT count(*) AS n FROM {t}")
    assert count.split()[2] == str(2 * (TRANSACTIONS["insert"] + TRANSACTIONS["txn"]))


@pytest.mark.skipif(JAVA is None or not PGJDBC.exists(), reason="needs java and libpostgresql-jdbc-java")
def test_pgjdbc(ss_server, unique_name):
    res = subprocess.run([JAVA, "-cp", str(PGJDBC), str(JAVA_DIR / "Test.java"),
                          f"jdbc:postgresql://{ss_server.host}:{ss_server.port}/postgres", unique_name("jdbc")],
                         capture_output=True, text=True, timeout=180, cwd=str(JAVA_DIR))
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert out.count("batch results 1000") == 2 and out.count("rows 1000 499500 n0") == 2, out
    assert out.count("read only refused 25006") == 2 and out.count("isolation repeatable read") == 2, out
    assert out.rstrip().endswith("OK"), out
