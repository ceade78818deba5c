"""``--hba FILE``: a small pg_hba.conf (issue 20).  Lines allow or reject by
connection type, database, role and client address and pick the method;
the first match decides, no match refuses, with PostgreSQL's messages."""
from __future__ import annotations

import subprocess
import sys

import psycopg
import pytest

from splitstream.server import hba

SUPER = "hba-super"

RULES = """
# TYPE     DATABASE  USER      ADDRESS        METHOD
hostnossl  all       blocked   127.0.0.1/32   reject
host       postgres  trusted   127.0.0.1/32   trust
host       postgres  ghost     127.0.0.1/32   trust
host       postgres  md5er     127.0.0.1 255.255.255.255  md5
host       postgres  all       127.0.0.1/32   scram-sha-256
host       all       all       10.0.0.0/8     trust
"""


def _connect(server, user: str, password: str | None = None, dbname: str = "postgres") -> psycopg.Connection:
    kw = {"password": password} if password is not None else {}
    return psycopg.connect(host="127.0.0.1", port=server.port, user=user, dbname=dbname, autocommit=True,
                           connect_timeout=10, **kw)


def _refused(server, user: str, password: str | None = None, dbname: str = "postgres") -> str:
    with pytest.raises(psycopg.OperationalError) as ei:
        _connect(server, user, password, dbname)
    return str(ei.value)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from tests.support.servers import SplitstreamServer

    d = tmp_path_factory.mktemp("ss_hba")
    (d / "hba.conf").write_text(RULES)
    srv = SplitstreamServer(d / "data", password=SUPER, extra_args=["--fsync", "off", "--hba", str(d / "hba.conf")])
    srv.start()
    try:
        with _connect(srv, "postgres", SUPER) as c:
            for sql in ["CREATE ROLE blocked LOGIN PASSWORD 'b'", "CREATE ROLE trusted LOGIN",
                        "CREATE ROLE alice LOGIN PASSWORD 'a'", "CREATE TABLE hidden (x int)",
                        "SET password_encryption = 'md5'", "CREATE ROLE md5er LOGIN PASSWORD 'm'"]:
                c.execute(sql)
        yield srv
    finally:
        srv.stop()


def test_first_matching_line_decides(server):
    assert 'pg_hba.conf rejects connection for host "127.0.0.1", user "blocked", database "postgres", ' \
           'no encryption' in _refused(server, "blocked", "b")
    with _connect(server, "trusted") as c:       # trust: no password, the role's own privileges
        assert c.execute("SELECT current_user, current_setting('is_superuser')").fetchone() == ("trusted", "off")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("SELECT * FROM hidden")
    with _connect(server, "alice", "a") as c:
        assert c.execute("SELECT current_user").fetchone() == ("alice",)
    assert "password authentication failed" in _refused(server, "alice", "wrong")
    with _connect(server, "md5er", "m") as c:
        assert c.execute("SELECT 1").fetchone() == (1,)


def test_no_matching_line_refuses(server):
    assert 'no pg_hba.conf entry for host "127.0.0.1", user "trusted", database "other", no encryption' \
        in _refused(server, "trusted", dbname="other")


def test_trust_line_needs_an_existing_role(server):
    assert 'role "ghost" does not exist' in _refused(server, "ghost")


def test_lines_match_type_database_user_and_address():
    rules = hba.parse("host all all 127.0.0.1/32 scram-sha-256")
    assert hba.method_for(rules, False, "postgres", "u", "127.0.0.1") == "scram-sha-256"
    assert hba.method_for(rules, False, "postgres", "u", "10.1.1.1") is None
    assert hba.method_for(hba.parse("hostssl all all all md5"), False, "postgres", "u", "::1") is None
    assert hba.method_for(hba.parse("host sameuser all ::1/128 trust"), False, "u", "u", "::1") == "trust"


@pytest.mark.parametrize("line", ["local all all trust", "host all +grp 127.0.0.1/32 trust",
                                  "host all all 127.0.0.1/32 password", "host all all 127.0.0.1 trust",
                                  "host all all 127.0.0.1/32", "host all all 300.0.0.1/32 trust",
                                  "host all all 127.0.0.1/32 trust clientcert=verify-full"])
def test_unsupported_lines_stop_the_server(tmp_path, line):
    f = tmp_path / "hba.conf"
    f.write_text(line + "\n")
    proc = subprocess.run([sys.executable, "-m", "splitstream", "serve", "--port", "0", "--data-dir",
                           str(tmp_path / "d"), "--hba", str(f)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "line 1" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
