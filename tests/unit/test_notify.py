"""LISTEN / NOTIFY in-process (catalog/storage/notify.py, commands/notify.py):
what each session receives, when, and that a closed session stops listening.
The same behaviours are compared with PostgreSQL 15 through real clients in
tests/clients/test_listen_notify.py."""
from __future__ import annotations

import pytest

from splitstream.protocol import messages
from splitstream.protocol.errors import PgError
from tests.support.engine import open_engine, plain_session


@pytest.fixture()
def pair(tmp_path):
    with open_engine(str(tmp_path / "d")) as eng:
        a, b = plain_session(eng), plain_session(eng)
        a.info.pid, b.info.pid = 101, 202
        yield a, b


def test_listener_gets_committed_notifications_only(pair):
    a, b = pair
    assert a.execute_sql("LISTEN c").tag == "LISTEN"
    assert b.execute_sql("NOTIFY c, 'one'").tag == "NOTIFY"
    b.execute_sql("BEGIN")
    b.execute_sql("NOTIFY c, 'two'")
    assert a.notifications == [(202, "c", "one")]
    b.execute_sql("ROLLBACK")
    b.execute_sql("BEGIN")
    b.execute_sql("NOTIFY c, 'three'")
    b.execute_sql("NOTIFY c, 'three'")
    b.execute_sql("NOTIFY other, 'x'")
    b.execute_sql("COMMIT")
    assert a.notifications == [(202, "c", "one"), (202, "c", "three")]
    assert b.notifications == []       # b does not listen


def test_savepoints_release_keeps_rollback_drops(pair):
    a, b = pair
    a.execute_sql("LISTEN c")
    for sql in ("BEGIN", "NOTIFY c, 'p'", "SAVEPOINT s1", "NOTIFY c, 'q'", "LISTEN c", "ROLLBACK TO s1",
                "SAVEPOINT s2", "NOTIFY c, 'r'", "RELEASE s2", "NOTIFY c, 'p'", "COMMIT"):
        b.execute_sql(sql)
    assert [p for _pid, _c, p in a.notifications] == ["p", "r"]
    assert b.execute_sql("SELECT count(*) FROM pg_listening_channels()").batch.cols[0].to_pylist() == [0]


def test_closed_session_stops_listening(pair):
    a, b = pair
    a.execute_sql("LISTEN c")
    a.close()
    b.execute_sql("NOTIFY c")
    assert a.notifications == []


def test_unquoted_channel_folds_and_long_name_truncates(pair):
    a, b = pair
    res = a.execute_sql("LISTEN " + "Ab" * 40)
    assert res.notices and res.notices[0].message.startswith('identifier "abab')
    a.execute_sql('LISTEN "MiXed"')
    chans = a.execute_sql("SELECT * FROM pg_listening_channels()").batch.cols[0].to_pylist()
    assert chans == ["ab" * 31 + "a", "MiXed"]
    b.execute_sql("NOTIFY mixed")
    b.execute_sql("""NOTIFY "MiXed", E'tab\\there'""")
    b.execute_sql("NOTIFY \"MiXed\", $$it's$$")
    assert [p for _pid, _c, p in a.notifications] == ["tab\there", "it's"]


@pytest.mark.parametrize("sql", ["NOTIFY", "UNLISTEN a b", "LISTEN 1abc"])
def test_syntax_errors(pair, sql):
    with pytest.raises(PgError) as err:
        pair[0].execute_sql(sql)
    assert err.value.sqlstate == "42601"


def test_discard_all_unlistens(pair):
    a, b = pair
    a.execute_sql("LISTEN c")
    assert a.execute_sql("DISCARD ALL").tag == "DISCARD ALL"
    b.execute_sql("NOTIFY c")
    assert a.notifications == []


def test_notification_response_encoding():
    """'A', length, int32 pid, channel and payload as C strings (protocol v3)."""
    body = (7).to_bytes(4, "big") + b"chan\0p\xc3\xa9\0"
    assert messages.notification_response(7, "chan", "p\u00e9") == b"A" + (len(body) + 4).to_bytes(4, "big") + body
