"""The privilege scenario both servers run: roles, objects, grants, and the
statements generated from roles x objects x statement kinds.

Every generated statement runs inside BEGIN ... ROLLBACK, so whatever it
changes is undone and the statements stay independent of each other.
"""
from __future__ import annotations

PASSWORD = "pw-priv"

ROLES = ["p_owner", "p_reader", "p_writer", "p_none", "p_member", "p_noinh", "p_admin"]

SETUP = f"""
CREATE ROLE p_owner LOGIN PASSWORD '{PASSWORD}';
CREATE ROLE p_reader LOGIN PASSWORD '{PASSWORD}';
CREATE ROLE p_writer LOGIN PASSWORD '{PASSWORD}';
CREATE ROLE p_none LOGIN PASSWORD '{PASSWORD}';
CREATE ROLE p_group NOLOGIN;
CREATE ROLE p_member LOGIN PASSWORD '{PASSWORD}' IN ROLE p_group;
CREATE ROLE p_noinh LOGIN NOINHERIT PASSWORD '{PASSWORD}' IN ROLE p_group;
CREATE ROLE p_admin LOGIN CREATEROLE PASSWORD '{PASSWORD}';
CREATE ROLE p_nologin PASSWORD '{PASSWORD}';
CREATE ROLE p_limited LOGIN CONNECTION LIMIT 1 PASSWORD '{PASSWORD}';
CREATE ROLE p_expired LOGIN PASSWORD '{PASSWORD}' VALID UNTIL '2001-01-01';
CREATE SCHEMA ps;
CREATE SCHEMA pclosed;
GRANT USAGE ON SCHEMA ps TO p_reader, p_writer, p_group, p_owner;
GRANT CREATE ON SCHEMA public TO p_owner;
CREATE TABLE pt (a int, b text);
INSERT INTO pt VALUES (1, 'x'), (2, 'y');
ALTER TABLE pt OWNER TO p_owner;
CREATE TABLE ps.pt2 (a int, b text);
INSERT INTO ps.pt2 VALUES (1, 'x'), (3, 'z');
CREATE TABLE pclosed.pt3 (a int, b text);
GRANT ALL ON pclosed.pt3 TO PUBLIC;
CREATE TABLE ppub (a int, b text);
INSERT INTO ppub VALUES (5, 'p');
GRANT SELECT ON ppub TO PUBLIC;
CREATE SEQUENCE pseq;
GRANT USAGE ON SEQUENCE pseq TO p_writer;
GRANT SELECT ON pseq TO p_reader;
GRANT UPDATE ON pseq TO p_group;
CREATE VIEW pv AS SELECT a, b FROM pt;
ALTER VIEW pv OWNER TO p_reader;
CREATE VIEW pv2 AS SELECT a FROM ps.pt2;
ALTER VIEW pv2 OWNER TO p_none;
GRANT SELECT ON pt TO p_reader;
GRANT INSERT, UPDATE ON pt TO p_writer;
GRANT SELECT ON pt TO p_group;
GRANT SELECT, INSERT, DELETE ON ps.pt2 TO p_group WITH GRANT OPTION;
GRANT TRUNCATE, UPDATE ON ps.pt2 TO p_writer;
GRANT SELECT ON pv TO p_group, p_writer;
GRANT SELECT ON pv2 TO PUBLIC;
GRANT p_group TO p_admin WITH ADMIN OPTION;
GRANT SELECT (a), INSERT (a), UPDATE (b) ON pt TO p_none;
GRANT SELECT (b) ON ps.pt2 TO p_group;
"""

TABLES = ["pt", "ps.pt2", "pclosed.pt3", "ppub"]
VIEWS = ["pv", "pv2"]

TABLE_KINDS = [
    "SELECT * FROM {o} ORDER BY 1",
    "SELECT count(*) FROM {o}",
    "INSERT INTO {o} (a, b) VALUES (10, 'n')",
    "INSERT INTO {o} (a, b) VALUES (11, 'r') RETURNING a",
    "UPDATE {o} SET b = 'u'",
    "UPDATE {o} SET b = 'u' WHERE a = 1",
    "DELETE FROM {o} WHERE a = 2",
    "DELETE FROM {o}",
    "TRUNCATE {o}",
    "ALTER TABLE {o} ADD COLUMN c int",
    "DROP TABLE {o}",
    "GRANT SELECT ON {o} TO p_none",
    "COMMENT ON TABLE {o} IS 'c'",
    "CREATE INDEX p_idx ON {o} (a)",
    "SELECT has_table_privilege('{o}', 'SELECT'), has_table_privilege('{o}', 'INSERT, UPDATE')",
    "LOCK TABLE {o} IN ACCESS SHARE MODE",
    "LOCK TABLE {o} IN ROW EXCLUSIVE MODE",
    "LOCK TABLE {o}",
]
VIEW_KINDS = [
    "SELECT * FROM {o} ORDER BY 1",
    "SELECT count(*) FROM {o}",
    "DROP VIEW {o}",
    "GRANT SELECT ON {o} TO p_none",
    "SELECT has_table_privilege('{o}', 'SELECT')",
]
SEQUENCE_KINDS = [
    "SELECT nextval('pseq') > 0",
    "SELECT currval('pseq')",
    "SELECT setval('pseq', 5)",
    "SELECT last_value > 0 FROM pseq",
    "DROP SEQUENCE pseq",
    "SELECT has_sequence_privilege('pseq', 'USAGE'), has_sequence_privilege('pseq', 'SELECT')",
]
OTHER = [
    "CREATE TABLE newt (a int)",
    "CREATE TABLE newt AS SELECT * FROM pt",
    "INSERT INTO ppub SELECT * FROM pt",
    "DECLARE cur CURSOR FOR SELECT * FROM pt",
    "EXPLAIN (COSTS OFF) SELECT * FROM ps.pt2 WHERE false",
    "SELECT * FROM pt WHERE a IN (SELECT a FROM ps.pt2)",
    "WITH w AS (SELECT * FROM pclosed.pt3) SELECT count(*) FROM w",
    "UPDATE ppub SET b = (SELECT max(b) FROM pt)",
    "CREATE TABLE ps.newt (a int)",
    "CREATE VIEW newv AS SELECT 1 AS x",
    "CREATE SCHEMA news",
    "CREATE ROLE newr",
    "CREATE ROLE newsu SUPERUSER",
    "CREATE ROLE newcr CREATEROLE",
    "ALTER ROLE p_none CREATEDB",
    "DROP ROLE p_none",
    "GRANT p_group TO p_none",
    "REVOKE p_group FROM p_member",
    "SET ROLE p_group",
    "SELECT current_user = session_user",
    "SELECT pg_has_role('p_group', 'MEMBER'), pg_has_role('p_group', 'USAGE')",
    "SELECT has_schema_privilege('ps', 'USAGE'), has_schema_privilege('public', 'CREATE')",
    "SELECT rolname FROM pg_authid WHERE rolname = 'p_none'",
    "SELECT a FROM pt JOIN ps.pt2 USING (a) ORDER BY 1",
    "SELECT a FROM pt ORDER BY 1",
    "SELECT b FROM pt ORDER BY 1",
    "SELECT pt.a, x.b FROM pt, ps.pt2 x WHERE pt.a = x.a",
    "INSERT INTO pt (a) VALUES (7)",
    "INSERT INTO pt VALUES (7)",
    "UPDATE pt SET b = 'v' WHERE a = 1",
    "UPDATE pt SET b = b || 'v'",
    "SELECT has_column_privilege('pt', 'a', 'SELECT'), has_column_privilege('pt', 'b', 'UPDATE')",
    "SELECT (SELECT count(*) FROM pt)",
    "SELECT table_schema, table_name, table_type FROM information_schema.tables "
    "WHERE table_schema IN ('public', 'ps', 'pclosed') ORDER BY 1, 2",
    "SELECT table_name, column_name FROM information_schema.columns "
    "WHERE table_schema IN ('public', 'ps', 'pclosed') ORDER BY 1, 2",
    "SELECT schema_name, schema_owner FROM information_schema.schemata "
    "WHERE schema_name IN ('public', 'ps', 'pclosed') ORDER BY 1",
    "SELECT grantor, grantee, table_schema, table_name, privilege_type, is_grantable, with_hierarchy "
    "FROM information_schema.table_privileges WHERE table_schema IN ('public', 'ps', 'pclosed') "
    "ORDER BY 1, 2, 3, 4, 5",
    "SELECT rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolreplication, rolconnlimit, "
    "rolpassword, rolvaliduntil, rolbypassrls FROM pg_roles WHERE left(rolname, 2) = 'p_' ORDER BY 1",
    "SELECT r.rolname, m.rolname, g.rolname, a.admin_option FROM pg_auth_members a "
    "JOIN pg_roles r ON r.oid = a.roleid JOIN pg_roles m ON m.oid = a.member JOIN pg_roles g ON g.oid = a.grantor "
    "WHERE left(m.rolname, 2) = 'p_' ORDER BY 1, 2",
    "SELECT usename, usecreatedb, usesuper, passwd FROM pg_user WHERE left(usename, 2) = 'p_' ORDER BY 1",
    "ALTER TABLE pt OWNER TO p_reader",
    "ALTER TABLE pt OWNER TO p_group",
    "REASSIGN OWNED BY p_owner TO p_reader",
]


def statements() -> list[str]:
    """Every statement each role runs (roles x objects x kinds, and the rest)."""
    out = [k.format(o=o) for o in TABLES for k in TABLE_KINDS]
    out += [k.format(o=o) for o in VIEWS for k in VIEW_KINDS]
    return out + SEQUENCE_KINDS + OTHER


#: COPY statements and the rows COPY FROM sends.
COPY_OUT = [f"COPY {o} TO STDOUT" for o in TABLES] + ["COPY (SELECT * FROM pt) TO STDOUT", "COPY (SELECT * FROM pv) TO STDOUT",
                                                      "COPY pt (a) TO STDOUT", "COPY (SELECT a FROM pt) TO STDOUT"]
COPY_IN = [f"COPY {o} (a, b) FROM STDIN" for o in TABLES]
COPY_ROWS = [(20, "c1"), (21, "c2")]

#: Prepared (extended protocol, server-side prepared) statements with a parameter.
PREPARED = [
    ("SELECT b FROM {o} WHERE a = %s", (1,)),
    ("INSERT INTO {o} (a, b) VALUES (%s, 'q')", (30,)),
    ("DELETE FROM {o} WHERE a = %s", (1,)),
]
