"""Changes to tables a continuous view reads (thesis 4.2.7).

A table joined directly with a stream below the view's grouping (a *static*
table) was read once, when the view was created: any change to its rows would
leave the view silently inconsistent, so every statement that changes them
(INSERT, UPDATE, DELETE, upsert, COPY, TRUNCATE, foreign-key actions, ALTER
TABLE rewrites) is refused with SQLSTATE 0A000 and a hint, and the table is
left unchanged.  Tables read only above the grouping (*upper* tables, joined
or in a subquery expression) are read at query time: every change is
accepted and the next read of the view reflects it.  Each view is checked
against the same query over a plain table that received the same events.
"""
from __future__ import annotations

import random

import psycopg
import pytest

from .oracle import assert_view_matches, rows

T_ROWS = [(1, "x", "a", 1), (2, "y", "b", 10), (3, "z", "c", 100), (4, "w", "a", 1000)]

STATIC_VIEW = ("SELECT t.label, count(*) AS n, sum(s.v * t.w) AS total "
               "FROM {s} s JOIN {t} t ON t.k = s.k GROUP BY t.label")
UPPER_VIEW = ("SELECT g.k, g.n, t.label FROM (SELECT k, count(*) AS n FROM {s} GROUP BY k) g "
              "JOIN {t} t ON t.k = g.k")
UPPER_VIEW_TABLE_FIRST = ("SELECT t.label, t.w, g.n FROM {t} t LEFT JOIN "
                          "(SELECT k, count(*) AS n FROM {s} GROUP BY k) g ON g.k = t.k")
SUBQUERY_VIEW = ("SELECT g.k, g.n, (SELECT t.label FROM {t} t WHERE t.k = g.k) AS label "
                 "FROM (SELECT k, count(*) AS n FROM {s} GROUP BY k) g "
                 "WHERE g.k IN (SELECT t2.k FROM {t} t2 WHERE t2.w < 500)")


class Setup:
    """A stream, a plain table receiving the same events (the oracle's input),
    a table ``t`` the view reads, and the view."""

    def __init__(self, cur, unique_name, view_sql: str, t_ddl: str = "") -> None:
        self.cur = cur
        self.s, self.e, self.t, self.v = (unique_name(p) for p in ("s", "e", "t", "v"))
        self.rng = random.Random(11)
        cur.execute(f"CREATE FOREIGN TABLE {self.s} (k int, v int) SERVER stream")
        cur.execute(f"CREATE TABLE {self.e} (k int, v int)")
        cur.execute(f"CREATE TABLE {self.t} (k int PRIMARY KEY, note text, label text, w int{t_ddl})")
        self.view_sql = view_sql
        cur.executemany(f"INSERT INTO {self.t} (k, note, label, w) VALUES (%s, %s, %s, %s)", T_ROWS)

    def create_view(self) -> None:
        self.cur.execute(f"CREATE VIEW {self.v} AS " + self.view_sql.format(s=self.s, t=self.t))

    def feed(self, n: int = 60) -> None:
        """Events with keys 1..5 (5 has no row in ``t``) into the stream and the oracle table."""
        ev = [(self.rng.randrange(1, 6), self.rng.randrange(100)) for _ in range(n)]
        self.cur.executemany(f"INSERT INTO {self.s} VALUES (%s, %s)", ev)
        self.cur.executemany(f"INSERT INTO {self.e} VALUES (%s, %s)", ev)

    def check(self) -> None:
        assert_view_matches(self.cur, self.v, self.view_sql.format(s=self.e, t=self.t))

    def table(self) -> list[tuple]:
        return rows(self.cur, f"SELECT * FROM {self.t}")


@pytest.fixture
def static(ss_conn, unique_name):
    st = Setup(ss_conn.cursor(), unique_name, STATIC_VIEW)
    st.create_view()
    st.feed()
    st.check()
    return st


def _refused(st: Setup, sql: str, sqlstate: str = "0A000") -> psycopg.Error:
    """``sql`` fails with ``sqlstate``; the table is unchanged and the view
    stays consistent with it after more events."""
    before = st.table()
    with pytest.raises(psycopg.Error) as ei:
        st.cur.execute(sql)
    assert ei.value.sqlstate == sqlstate, ei.value
    assert st.table() == before
    st.feed()
    st.check()
    return ei.value


def _refused_with_hint(st: Setup, sql: str) -> None:
    err = _refused(st, sql)
    text = err.diag.message_primary + (err.diag.message_detail or "")
    assert st.v in text, err
    assert err.diag.message_hint, "the refusal must say what to do instead"


STATIC_REFUSED = {
    "insert": "INSERT INTO {t} VALUES (5, 'n', 'e', 7)",
    "update": "UPDATE {t} SET w = w + 1 WHERE k = 1",
    "delete": "DELETE FROM {t} WHERE k = 2",
    "truncate": "TRUNCATE {t}",
    "upsert_all_conflict": "INSERT INTO {t} VALUES (1, 'x', 'a', 5) ON CONFLICT (k) DO UPDATE SET w = excluded.w",
    "upsert_some_conflict": "INSERT INTO {t} VALUES (1, 'x', 'a', 5), (9, 'x', 'q', 1) "
                            "ON CONFLICT (k) DO UPDATE SET w = excluded.w",
    "upsert_label": "INSERT INTO {t} AS o VALUES (2, 'y', 'a', 0) ON CONFLICT (k) DO UPDATE SET label = excluded.label",
    "alter_type_used": "ALTER TABLE {t} ALTER COLUMN w TYPE bigint",
    "alter_type_key": "ALTER TABLE {t} ALTER COLUMN k TYPE bigint",
    "rename_used_column": "ALTER TABLE {t} RENAME COLUMN w TO weight",
    "rename_table": "ALTER TABLE {t} RENAME TO {t}_renamed",
}


@pytest.mark.parametrize("what", sorted(STATIC_REFUSED))
def test_static_table_changes_are_refused(static, what):
    _refused_with_hint(static, STATIC_REFUSED[what].format(t=static.t))


def test_static_table_refusal_names_table_and_view(static):
    err = _refused(static, f"UPDATE {static.t} SET w = 0")
    assert err.diag.message_primary == (f'cannot modify table "{static.t}": '
                                        f'continuous view "{static.v}" joins it directly with a stream')


def test_alter_type_refusal_is_postgres_wording(static):
    err = _refused(static, f"ALTER TABLE {static.t} ALTER COLUMN w TYPE bigint")
    assert err.diag.message_primary == "cannot alter type of a column used by a view or rule"
    assert err.diag.message_detail == f'rule _RETURN on view {static.v} depends on column "w"'


def test_static_table_copy_is_refused(static):
    before = static.table()
    with pytest.raises(psycopg.errors.FeatureNotSupported) as ei:
        with static.cur.copy(f"COPY {static.t} FROM STDIN") as cp:
            cp.write_row((7, "n", "g", 3))
    assert ei.value.diag.message_hint
    assert static.table() == before
    static.feed()
    static.check()


def test_static_table_drop_used_column_is_refused(static):
    """PostgreSQL: 2BP01, the view depends on the column; CASCADE drops the view."""
    err = _refused(static, f"ALTER TABLE {static.t} DROP COLUMN w", "2BP01")
    assert err.diag.message_primary == f"cannot drop column w of table {static.t} because other objects depend on it"
    assert err.diag.message_detail == f"view {static.v} depends on column w of table {static.t}"
    assert err.diag.message_hint
    static.cur.execute(f"ALTER TABLE {static.t} DROP COLUMN w CASCADE")
    static.cur.execute("SELECT count(*) FROM pg_class WHERE relname = %s", (static.v,))
    assert static.cur.fetchone() == (0,)
    static.cur.execute(f"UPDATE {static.t} SET label = 'free'")     # no view reads the table any more


def test_static_table_no_op_statements_are_accepted(static):
    """Statements that change no row leave the view consistent: accepted."""
    cur, t = static.cur, static.t
    before = static.table()
    cur.execute(f"INSERT INTO {t} VALUES (1, 'x', 'zz', 0), (2, 'x', 'zz', 0) ON CONFLICT (k) DO NOTHING")
    assert cur.statusmessage == "INSERT 0 0"
    cur.execute(f"INSERT INTO {t} VALUES (1, 'x', 'zz', 0) ON CONFLICT (k) DO UPDATE SET w = 0 WHERE false")
    cur.execute(f"UPDATE {t} SET w = 0 WHERE k = 42")
    cur.execute(f"DELETE FROM {t} WHERE k = 42")
    assert static.table() == before
    static.feed()
    static.check()


def test_static_table_layout_changes_not_used_by_view_are_accepted(static):
    """Adding a column, or dropping or retyping one the view does not read,
    changes no value the view uses (PostgreSQL accepts them too)."""
    cur, t = static.cur, static.t
    cur.execute(f"ALTER TABLE {t} ADD COLUMN extra int DEFAULT 3")
    cur.execute(f"ALTER TABLE {t} ALTER COLUMN note TYPE varchar(10)")
    cur.execute(f"ALTER TABLE {t} DROP COLUMN note")
    static.feed()
    static.check()


@pytest.mark.parametrize("on_delete", ["CASCADE", "SET NULL"])
def test_foreign_key_action_into_static_table_is_refused(ss_conn, unique_name, on_delete):
    """Deleting a parent row would cascade into the static table."""
    cur = ss_conn.cursor()
    p = unique_name("p")
    cur.execute(f"CREATE TABLE {p} (id int PRIMARY KEY)")
    cur.execute(f"INSERT INTO {p} VALUES (1), (2), (3), (4)")
    st = Setup(cur, unique_name, STATIC_VIEW, f", pid int REFERENCES {p} (id) ON DELETE {on_delete}")
    cur.execute(f"UPDATE {st.t} SET pid = k")
    st.create_view()
    st.feed()
    parent = rows(cur, f"SELECT * FROM {p}")
    _refused_with_hint(st, f"DELETE FROM {p} WHERE id = 2")
    assert rows(cur, f"SELECT * FROM {p}") == parent
    cur.execute(f"DELETE FROM {p} WHERE id NOT IN (SELECT pid FROM {st.t})")    # no child row: accepted


def test_view_created_in_the_same_transaction_guards_its_table(ss_conn, unique_name):
    """The view's static pipeline read the table at CREATE VIEW, before commit."""
    st = Setup(ss_conn.cursor(), unique_name, STATIC_VIEW)
    before = st.table()
    with pytest.raises(psycopg.errors.FeatureNotSupported):
        with ss_conn.transaction():
            st.create_view()
            st.cur.execute(f"UPDATE {st.t} SET w = 0")
    assert st.table() == before
    with ss_conn.transaction():
        st.create_view()
        st.cur.execute(f"DROP VIEW {st.v}")
        st.cur.execute(f"UPDATE {st.t} SET w = 0 WHERE k = 1")     # the view is gone again: accepted
    st.create_view()
    st.feed()
    st.check()


def test_static_table_is_writable_once_the_view_is_dropped(static):
    static.cur.execute(f"DROP VIEW {static.v}")
    static.cur.execute(f"UPDATE {static.t} SET w = 0")
    static.cur.execute(f"TRUNCATE {static.t}")


# ---------------------------------------------------------------- upper tables

UPPER_ACCEPTED = {
    "insert": ["INSERT INTO {t} VALUES (5, 'n', 'e', 7)"],
    "update": ["UPDATE {t} SET label = label || '!' WHERE k <= 2"],
    "update_key": ["UPDATE {t} SET k = 6 WHERE k = 3"],
    "delete": ["DELETE FROM {t} WHERE k = 2"],
    "truncate": ["TRUNCATE {t}"],
    "upsert_all_conflict": ["INSERT INTO {t} VALUES (1, 'x', 'A', 5), (4, 'w', 'D', 0) "
                            "ON CONFLICT (k) DO UPDATE SET label = excluded.label, w = excluded.w"],
    "upsert_some_conflict": ["INSERT INTO {t} VALUES (1, 'x', 'A', 5), (5, 'x', 'E', 1) "
                             "ON CONFLICT (k) DO UPDATE SET label = excluded.label"],
    "upsert_nothing": ["INSERT INTO {t} VALUES (1, 'x', 'A', 5), (5, 'x', 'E', 1) ON CONFLICT (k) DO NOTHING"],
    "add_column": ["ALTER TABLE {t} ADD COLUMN extra int DEFAULT 3", "UPDATE {t} SET label = 'new' WHERE k = 1"],
    "drop_unused_column": ["ALTER TABLE {t} DROP COLUMN note", "UPDATE {t} SET label = 'new' WHERE k = 1"],
    "retype_unused_column": ["ALTER TABLE {t} ALTER COLUMN note TYPE varchar(10)",
                             "INSERT INTO {t} VALUES (5, 'n', 'e', 7)"],
}


def _upper_accepts(st: Setup, statements: list[str]) -> None:
    st.create_view()
    st.feed()
    st.check()                       # the view's result is now stored
    for sql in statements:
        st.cur.execute(sql.format(t=st.t))
        st.check()                   # the next read reflects the change
    st.feed()
    st.check()


UPPER_VIEWS = {"join": UPPER_VIEW, "table_first": UPPER_VIEW_TABLE_FIRST, "subquery": SUBQUERY_VIEW}


@pytest.mark.parametrize("view", sorted(UPPER_VIEWS))
@pytest.mark.parametrize("what", sorted(UPPER_ACCEPTED))
def test_upper_table_changes_are_visible(ss_conn, unique_name, view, what):
    _upper_accepts(Setup(ss_conn.cursor(), unique_name, UPPER_VIEWS[view]), UPPER_ACCEPTED[what])


@pytest.mark.parametrize("view", sorted(UPPER_VIEWS))
def test_upper_table_copy_is_visible(ss_conn, unique_name, view):
    st = Setup(ss_conn.cursor(), unique_name, UPPER_VIEWS[view])
    _upper_accepts(st, [])
    with st.cur.copy(f"COPY {st.t} FROM STDIN") as cp:
        cp.write_row((5, "n", "e", 7))
    st.check()


def test_foreign_key_cascade_into_upper_table_is_visible(ss_conn, unique_name):
    cur = ss_conn.cursor()
    p = unique_name("p")
    cur.execute(f"CREATE TABLE {p} (id int PRIMARY KEY)")
    cur.execute(f"INSERT INTO {p} VALUES (1), (2), (3), (4)")
    st = Setup(cur, unique_name, UPPER_VIEW, f", pid int REFERENCES {p} (id) ON DELETE CASCADE")
    cur.execute(f"UPDATE {st.t} SET pid = k")
    _upper_accepts(st, [f"DELETE FROM {p} WHERE id = 2"])


@pytest.mark.parametrize("sql, sqlstate", [("ALTER TABLE {t} ALTER COLUMN label TYPE varchar(1)", "0A000"),
                                           ("ALTER TABLE {t} DROP COLUMN label", "2BP01"),
                                           ("ALTER TABLE {t} RENAME COLUMN label TO name", "0A000")])
def test_upper_table_alter_of_used_column_is_refused(ss_conn, unique_name, sql, sqlstate):
    """As PostgreSQL does for any view: a column the view reads keeps its type and name."""
    st = Setup(ss_conn.cursor(), unique_name, UPPER_VIEW)
    _upper_accepts(st, [])
    _refused(st, sql.format(t=st.t), sqlstate)


@pytest.mark.parametrize("view", sorted(UPPER_VIEWS))
def test_upper_table_changes_between_two_reads_are_all_visible(ss_conn, unique_name, view):
    """Several changes between reads: the view must never mistake a new table
    version for the one its stored result was computed from (the result used
    to be keyed by the versions' ids, which a freed version hands on)."""
    st = Setup(ss_conn.cursor(), unique_name, UPPER_VIEWS[view])
    _upper_accepts(st, [])
    for i in range(100):
        st.cur.execute(f"UPDATE {st.t} SET label = 'l{i}' WHERE k = 1")
        st.cur.execute(f"UPDATE {st.t} SET label = 'm{i}' WHERE k = 2")
        st.check()


@pytest.mark.parametrize("sql", ["ALTER TABLE {s} RENAME TO {s}_renamed",
                                 "ALTER FOREIGN TABLE {s} RENAME COLUMN v TO value",
                                 "ALTER TABLE {t} RENAME TO {t}_renamed"])
def test_renaming_what_an_upper_view_reads_is_refused(ss_conn, unique_name, sql):
    """The view is planned again from its SQL text after a restart: names it uses stay."""
    st = Setup(ss_conn.cursor(), unique_name, "SELECT g.k, g.total, t.label FROM (SELECT k, sum(v) AS total "
                                              "FROM {s} GROUP BY k) g JOIN {t} t ON t.k = g.k")
    _upper_accepts(st, [])
    _refused(st, sql.format(s=st.s, t=st.t))


def test_views_survive_restart_after_accepted_alters(ss_server_factory, unique_name):
    """Layout changes the views accepted leave them consistent after recovery,
    which plans them again over the altered tables."""
    server = ss_server_factory()
    conn = psycopg.connect(server.dsn, autocommit=True, connect_timeout=10)
    static = Setup(conn.cursor(), unique_name, STATIC_VIEW)
    upper = Setup(conn.cursor(), unique_name, UPPER_VIEW_TABLE_FIRST)
    for st in (static, upper):
        st.create_view()
        st.feed()
        st.cur.execute(f"ALTER TABLE {st.t} DROP COLUMN note")
        st.cur.execute(f"ALTER TABLE {st.t} ADD COLUMN extra int DEFAULT 1")
        st.check()
    upper.cur.execute(f"UPDATE {upper.t} SET label = 'new' WHERE k = 2")
    conn.close()
    server.restart()
    with psycopg.connect(server.dsn, autocommit=True, connect_timeout=10) as conn:
        for st in (static, upper):
            st.cur = conn.cursor()
            st.check()
            st.feed()
            st.check()
        _refused(static, f"DELETE FROM {static.t}")
