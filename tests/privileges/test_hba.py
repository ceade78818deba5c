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


def test_group_samerole_file_and_quoted_names(tmp_path):
    """+role matches the role's members (directly or not, itself too), samerole a database named as one of
    them, @file the names listed in a file beside the hba file; a quoted name is only a name."""
    (tmp_path / "names.txt").write_text("carol, dave  # the auditors\neve\n")
    (tmp_path / "hba.conf").write_text('host all +grp 127.0.0.1/32 trust\n'
                                       'host samerole all 127.0.0.1/32 md5\n'
                                       'host all @names.txt,"+lit" 127.0.0.1/32 scram-sha-256\n'
                                       'host "all" all 127.0.0.1/32 reject\n')
    rules = hba.load(str(tmp_path / "hba.conf"))
    groups = {"ann": frozenset({"ann", "grp"}), "bob": frozenset({"bob", "team"}), "grp": frozenset({"grp"})}

    def method(database: str, user: str) -> str | None:
        return hba.method_for(rules, False, database, user, "127.0.0.1", lambda u: groups.get(u, frozenset()))

    assert method("postgres", "ann") == "trust"
    assert method("team", "bob") == "md5" and method("postgres", "bob") is None
    assert method("postgres", "dave") == method("postgres", "eve") == method("x", "+lit") == "scram-sha-256"
    assert method("all", "zed") == "reject" and method("postgres", "zed") is None
    assert method("postgres", "grp") == "trust"          # +grp: the role itself is a member
    assert hba.needs_membership(rules)


def test_local_lines_match_the_unix_socket_only():
    rules = hba.parse("local all all trust\nhost all all 127.0.0.1/32 md5", unix_socket=True)
    assert hba.method_for(rules, False, "postgres", "u", "") == "trust"
    assert hba.method_for(rules, False, "postgres", "u", "127.0.0.1") == "md5"
    with pytest.raises(hba.HbaError, match="unix-socket-dir"):
        hba.parse("local all all trust")


def test_unix_socket_with_local_lines(tmp_path):
    """--unix-socket-dir: psql's default kind of connection, matched by local lines."""
    from tests.support.servers import SplitstreamServer

    (tmp_path / "hba.conf").write_text("local all +admins trust\nlocal all all reject\nhost all all all scram-sha-256\n")
    sock = tmp_path / "sock"
    sock.mkdir()
    srv = SplitstreamServer(tmp_path / "data", password=SUPER, extra_args=[
        "--fsync", "off", "--hba", str(tmp_path / "hba.conf"), "--unix-socket-dir", str(sock)])
    srv.start()
    try:
        with _connect(srv, "postgres", SUPER) as c:
            c.execute("CREATE ROLE admins")
            c.execute("CREATE ROLE ann LOGIN IN ROLE admins")
            c.execute("CREATE ROLE bob LOGIN")
        with psycopg.connect(host=str(sock), port=srv.port, user="ann", dbname="postgres") as c:
            assert c.execute("SELECT current_user").fetchone() == ("ann",)
        with pytest.raises(psycopg.OperationalError) as ei:
            psycopg.connect(host=str(sock), port=srv.port, user="bob", dbname="postgres")
        assert 'pg_hba.conf rejects connection for host "[local]", user "bob", database "postgres"' in str(ei.value)
    finally:
        srv.stop()
    assert not (sock / f".s.PGSQL.{srv.port}").exists()


@pytest.mark.parametrize("line", ["local all all trust", "host replication all 127.0.0.1/32 trust",
                                  "host all all 127.0.0.1/32 password", "host all all 127.0.0.1 trust",
                                  "host all all 127.0.0.1/32", "host all all 300.0.0.1/32 trust",
                                  "host all all 127.0.0.1/32 trust clientcert=verify-full",
                                  "host all @missing.txt 127.0.0.1/32 trust"])
def test_unsupported_lines_stop_the_server(tmp_path, line):
    f = tmp_path / "hba.conf"
    f.write_text(line + "\n")
    proc = subprocess.run([sys.executable, "-m", "splitstream", "serve", "--port", "0", "--data-dir",
                           str(tmp_path / "d"), "--hba", str(f)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "line 1" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
