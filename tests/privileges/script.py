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
CREATE ROLE p_noconnect LOGIN PASSWORD '{PASSWORD}';
REVOKE CONNECT, TEMPORARY ON DATABASE postgres FROM PUBLIC;
GRANT CONNECT ON DATABASE postgres TO p_owner, p_reader, p_writer, p_none, p_group, p_admin, p_limited, p_expired;
GRANT CONNECT ON DATABASE postgres TO p_noinh;
GRANT CREATE ON DATABASE postgres TO p_admin WITH GRANT OPTION;
GRANT CONNECT ON DATABASE template1 TO p_reader;
ALTER DEFAULT PRIVILEGES FOR ROLE p_owner GRANT SELECT ON TABLES TO p_reader;
ALTER DEFAULT PRIVILEGES FOR ROLE p_owner IN SCHEMA ps GRANT INSERT, UPDATE ON TABLES TO p_writer WITH GRANT OPTION;
ALTER DEFAULT PRIVILEGES FOR ROLE p_owner REVOKE USAGE ON SEQUENCES FROM p_owner;
ALTER DEFAULT PRIVILEGES IN SCHEMA ps GRANT USAGE ON SEQUENCES TO p_group;
ALTER DEFAULT PRIVILEGES GRANT USAGE ON SCHEMAS TO p_reader;
ALTER DEFAULT PRIVILEGES FOR ROLE p_admin REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE p_admin GRANT EXECUTE ON ROUTINES TO p_none;
ALTER ROLE p_reader SET work_mem = '2MB';
ALTER ROLE p_reader SET search_path = ps, public;
ALTER ROLE p_writer IN DATABASE postgres SET statement_timeout = '5min';
ALTER ROLE p_writer SET statement_timeout = '1min';
ALTER ROLE p_writer SET extra_float_digits = 2;
ALTER ROLE ALL SET lock_timeout = '1min';
ALTER DATABASE postgres SET extra_float_digits = 0;
ALTER ROLE p_admin SET my.option = 'x'
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
#: database privileges (issue 20 item 2): the session's database and others
DATABASE = [
    "SELECT has_database_privilege('postgres', 'CONNECT'), has_database_privilege('postgres', 'CREATE'), "
    "has_database_privilege('postgres', 'TEMP'), has_database_privilege('template1', 'CONNECT')",
    "SELECT has_database_privilege('p_noconnect', 'postgres', 'CONNECT'), "
    "has_database_privilege('p_member', 'postgres', 'CONNECT WITH GRANT OPTION')",
    "SELECT has_database_privilege('nosuch', 'CONNECT')",
    "CREATE TEMP TABLE tmpt (a int)",
    "CREATE TEMPORARY TABLE tmpt AS SELECT 1 AS a",
    "GRANT CREATE ON DATABASE postgres TO p_none",
    "GRANT CREATE, CONNECT ON DATABASE postgres TO p_none WITH GRANT OPTION",
    "REVOKE CONNECT ON DATABASE postgres FROM p_reader",
    "REVOKE ALL ON DATABASE postgres FROM p_admin CASCADE",
    "GRANT CONNECT ON DATABASE nosuch TO p_none",
    "GRANT SELECT ON DATABASE postgres TO p_none",
    "GRANT ALL ON DATABASE postgres, template1 TO p_none",
    "ALTER SCHEMA ps OWNER TO p_admin",
    "SELECT datname, array_to_string(datacl, ','), datallowconn FROM pg_database ORDER BY 1",
]
#: ALTER DEFAULT PRIVILEGES (issue 20 item 1)
DEFAULT_PRIVILEGES = [
    "ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO p_none",
    "ALTER DEFAULT PRIVILEGES FOR ROLE p_owner GRANT SELECT ON TABLES TO p_none",
    "ALTER DEFAULT PRIVILEGES FOR ROLE p_group REVOKE ALL ON SEQUENCES FROM PUBLIC",
    "ALTER DEFAULT PRIVILEGES IN SCHEMA ps GRANT SELECT ON TABLES TO p_none",
    "ALTER DEFAULT PRIVILEGES IN SCHEMA ps, nosuch GRANT SELECT ON TABLES TO p_none",
    "ALTER DEFAULT PRIVILEGES IN SCHEMA ps GRANT USAGE ON SCHEMAS TO p_none",
    "ALTER DEFAULT PRIVILEGES GRANT USAGE ON SCHEMAS TO p_none, nosuch",
    "ALTER DEFAULT PRIVILEGES GRANT SELECT (a) ON TABLES TO p_none",
    "ALTER DEFAULT PRIVILEGES GRANT INSERT ON SEQUENCES TO p_none",
    "ALTER DEFAULT PRIVILEGES REVOKE GRANT OPTION FOR ALL ON TABLES FROM p_writer",
    "SELECT pg_get_userbyid(d.defaclrole), n.nspname, d.defaclobjtype, array_to_string(d.defaclacl, ',') "
    "FROM pg_default_acl d LEFT JOIN pg_namespace n ON n.oid = d.defaclnamespace ORDER BY 1, 2, 3",
    "CREATE TABLE ps.dp_t (a int)",
    "CREATE SEQUENCE ps.dp_s",
    "CREATE TABLE dp_t (a serial)",
    "CREATE VIEW dp_v AS SELECT 1 AS x",
    "CREATE SCHEMA dp_s",
]
#: ALTER ROLE / DATABASE ... SET (issue 20 item 3); a role's own connection starts with its settings
ROLE_SETTINGS = [
    "SHOW work_mem",
    "SHOW search_path",
    "SHOW statement_timeout",
    "SHOW lock_timeout",
    "SELECT current_setting('extra_float_digits'), coalesce(current_setting('my.option', true), '')",
    "ALTER ROLE CURRENT_USER SET work_mem = '1MB'",
    "ALTER ROLE p_reader SET work_mem = '1MB'",
    "ALTER ROLE p_none IN DATABASE postgres SET search_path = public",
    "ALTER ROLE CURRENT_USER IN DATABASE nosuch SET work_mem = '1MB'",
    "ALTER ROLE CURRENT_USER SET log_min_messages = 'debug1'",
    "ALTER ROLE CURRENT_USER SET nosuch = 1",
    "ALTER ROLE CURRENT_USER SET my.opt = 1",
    "ALTER ROLE CURRENT_USER SET extra_float_digits = 9",
    "ALTER ROLE CURRENT_USER SET TimeZone = 'nowhere/nothing'",
    "ALTER ROLE CURRENT_USER SET port = 1",
    "ALTER ROLE CURRENT_USER SET is_superuser = on",
    "ALTER ROLE CURRENT_USER RESET ALL",
    "ALTER ROLE CURRENT_USER RESET work_mem",
    "ALTER ROLE ALL SET work_mem = '1MB'",
    "ALTER DATABASE postgres SET work_mem = '1MB'",
    "ALTER DATABASE postgres RESET ALL",
    "SELECT r.rolname, array_to_string(s.setconfig, ',') FROM pg_db_role_setting s "
    "JOIN pg_roles r ON r.oid = s.setrole ORDER BY 1, 2",
    "SELECT rolname, rolconfig FROM pg_roles WHERE rolconfig IS NOT NULL ORDER BY 1",
]
#: DROP OWNED (issue 20 item 4)
DROP_OWNED = [
    "DROP OWNED BY p_owner",
    "DROP OWNED BY p_noconnect",
    "DROP OWNED BY p_writer CASCADE",
    "REVOKE ALL ON pseq FROM p_writer",
    "REVOKE ALL ON ps.pt2 FROM p_none",
    "REVOKE SELECT, UPDATE ON pt FROM p_none",
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
] + DATABASE + DEFAULT_PRIVILEGES + ROLE_SETTINGS + DROP_OWNED


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
