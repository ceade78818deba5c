"""GRANT and REVOKE of privileges on relations, schemas, databases and functions
(PostgreSQL's aclchk.c: ExecGrantStmt, select_best_grantor, restrict_and_check_grant).

Column privileges live on the columns (``ColumnDef.acl``); a statement
needing SELECT, INSERT or UPDATE on a table is satisfied by the privilege on
every column it uses.  What is not implemented is refused, never accepted
and ignored: privileges on other object classes.  (ALTER
DEFAULT PRIVILEGES is default_privileges.py.)
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from splitstream.catalog.objects import acl
from splitstream.catalog.objects.model import DatabaseDef, Function, Relation, Role, Schema
from splitstream.protocol.errors import (
    DEPENDENT_OBJECTS_STILL_EXIST, FEATURE_NOT_SUPPORTED, INSUFFICIENT_PRIVILEGE, INVALID_CATALOG_NAME,
    INVALID_SCHEMA_NAME, UNDEFINED_COLUMN, UNDEFINED_TABLE,
    WRONG_OBJECT_TYPE, Notice, PgError,
)

from ..api import Result
from ..execution import privileges, proc_catalog
from ..sql import sql_functions
from ..execution.privileges import current_role, is_owner, relation_acl, schema_acl
from .base import Stmt
from .function_syntax import FunctionRef, parse_refs
from .function_syntax import Reader as FunctionReader
from .functions import find_function
from .role_syntax import Reader
from .roles import INVALID_GRANT_OPERATION, RoleMembershipStmt, get_role, role_spec

WARNING_PRIVILEGE_NOT_GRANTED = "01007"
WARNING_PRIVILEGE_NOT_REVOKED = "01006"

_UNSUPPORTED_TARGETS = {"DOMAIN", "TYPE", "LANGUAGE", "LARGE", "FOREIGN", "TABLESPACE", "PARAMETER"}
#: ON FUNCTION / PROCEDURE / ROUTINE and ALL ... IN SCHEMA: the noun, and the pg_proc kinds ALL covers
_ROUTINE_TARGETS = {"FUNCTION": "f", "PROCEDURE": "p", "ROUTINE": "fp"}


@dataclass
class GrantStmt(Stmt):
    """GRANT / REVOKE privileges ON objects TO / FROM roles."""

    grant: bool
    privs: str                     # letters; '' with all_privs
    all_privs: bool
    target: str                    # 'table', 'sequence', 'schema'
    objects: list[tuple[str | None, str]]
    in_schemas: list[str]          # ALL TABLES / SEQUENCES IN SCHEMA
    grantees: list[str]            # 'public' for PUBLIC
    option: bool                   # WITH GRANT OPTION / GRANT OPTION FOR
    cascade: bool = False
    grantor: str | None = None
    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)   # column privileges: letter -> columns
    functions: list[FunctionRef] = field(default_factory=list)          # ON FUNCTION f(args), ...
    routine_kinds: str = ""                                             # ALL FUNCTIONS / PROCEDURES / ROUTINES
    cacheable = False

    @property
    def tag(self) -> str:  # type: ignore[override]
        return "GRANT" if self.grant else "REVOKE"

    def run(self, session, ctx):
        st = ctx.txn.for_write(ctx.check_cancel)
        me = current_role(st, session.info)
        if self.grantor is not None:
            by = get_role(st, self.grantor)
            if by.oid != me.oid:
                raise PgError(FEATURE_NOT_SUPPORTED, "grantor must be current user")
        grantees = [acl.PUBLIC if g == "public" else get_role(st, g).oid for g in self.grantees]
        if self.target == "database":
            for name in [n for _, n in self.objects]:
                db = ctx.txn.state.databases.get(name)
                if db is None:
                    raise PgError(INVALID_CATALOG_NAME, f'database "{name}" does not exist')
                self.on_database(ctx, me, db, grantees)
        elif self.target == "function":
            for fn in self._functions(ctx.txn.state, session.info):
                current = acl.function_acl(fn)
                new, _, _ = self._apply(ctx, me, current, current, fn.owner, self._letters(ctx, "function"),
                                        privileges.denied("function", fn.name), f'"{fn.name}"', grantees)
                ctx.txn.apply(("function", replace(fn, acl=new)))
        elif self.target == "schema":
            for name in [n for _, n in self.objects]:
                sch = ctx.txn.state.schemas.get(name)
                if sch is None:
                    raise PgError(INVALID_SCHEMA_NAME, f'schema "{name}" does not exist')
                self.on_schema(ctx, me, sch, grantees)
        else:
            for rel in self._relations(ctx.txn.state, session.info):
                ctx.txn.apply(("rel", self.on_relation(ctx, me, rel, grantees)))
        return Result(tag=self.tag)

    def on_schema(self, ctx, me: Role, sch: Schema, grantees: list[int]) -> None:
        current = schema_acl(sch)
        new, _, _ = self._apply(ctx, me, current, current, acl.schema_owner(sch), self._letters(ctx, "schema"),
                                privileges.denied("schema", sch.name), f'"{sch.name}"', grantees)
        ctx.txn.apply(("schema", replace(sch, acl=new)))

    def on_database(self, ctx, me: Role, db: DatabaseDef, grantees: list[int]) -> None:
        current = acl.database_acl(db)
        name = db.name
        new, _, _ = self._apply(ctx, me, current, current, db.owner, self._letters(ctx, "database"),
                                privileges.denied("database", name), f'"{name}"', grantees)
        ctx.txn.apply(("database", replace(db, acl=new)))

    def on_relation(self, ctx, me: Role, rel: Relation, grantees: list[int]) -> Relation:
        cls = acl.object_class(rel.kind)
        if self.privs or (self.all_privs and not self.columns):
            current = relation_acl(rel)
            letters = self._letters(ctx, cls, rel)
            new, _, _ = self._apply(ctx, me, current, current, rel.owner, letters, privileges.denied(cls, rel.name),
                                    f'"{rel.name}"', grantees)
            rel = rel.with_(acl=new)
            taken = "".join(x for x in letters if x in acl.ALL_RIGHTS["column"])
            if not self.grant and taken:      # REVOKE on the table takes the same privileges on every column
                rel = self._on_columns(ctx, me, rel, grantees, {c.name: taken for c in rel.live_columns},
                                       taken if rel.kind != "v" else "")
        if self.columns:
            wanted: dict[str, str] = {}
            for letter, names in self.columns.items():
                if letter not in acl.ALL_RIGHTS["column"]:
                    raise PgError(INVALID_GRANT_OPERATION, f"invalid privilege type {acl.KEYWORD_OF[letter]} for column")
                for name in names:
                    col = rel.column(name)
                    if col is None or col.hidden:
                        raise PgError(UNDEFINED_COLUMN, f'column "{name}" of relation "{rel.name}" does not exist')
                    wanted[name] = acl.ordered(wanted.get(name, "") + letter)
            rel = self._on_columns(ctx, me, rel, grantees, wanted)
        return rel

    def _on_columns(self, ctx, me: Role, rel: Relation, grantees: list[int], wanted: dict[str, str],
                    system: str = "") -> Relation:
        """ExecGrant_Attribute, column by column in column order: the grantor
        is chosen from the table's and the column's ACL together.  A
        table-level REVOKE reaches the system columns too (``system``: the
        privileges it takes from them), which hold no privileges here but
        warn (or refuse) as PostgreSQL's do."""
        table_acl = relation_acl(rel)
        # a sequence's own columns exist only in PostgreSQL's catalog: like system columns, they hold nothing
        pseudo = SYSTEM_COLUMNS + (SEQUENCE_COLUMNS if rel.kind == "S" and not rel.columns else ())
        for name in pseudo if system else ():
            self._apply(ctx, me, (), table_acl, rel.owner, system, _column_denied(name, rel.name),
                        f'column "{name}" of relation "{rel.name}"', grantees,
                        all_privs=set(system) == set(acl.ALL_RIGHTS["column"]), whole=acl.ALL_RIGHTS["column"])
        cols = list(rel.columns)
        for i, col in enumerate(cols):
            letters = wanted.get(col.name, "")
            if not letters or col.dropped:
                continue
            current = col.acl or ()
            new, _, _ = self._apply(ctx, me, current, table_acl + current, rel.owner, letters,
                                    _column_denied(col.name, rel.name), f'column "{col.name}" of relation "{rel.name}"',
                                    grantees, all_privs=set(letters) == set(acl.ALL_RIGHTS["column"]),
                                    whole=acl.ALL_RIGHTS["column"])
            cols[i] = replace(col, acl=new or None)
        return rel.with_(columns=tuple(cols))

    def _functions(self, st, info) -> list[Function]:
        out: list[Function] = []
        for in_schema in self.in_schemas:
            if in_schema not in st.schemas:
                raise PgError(INVALID_SCHEMA_NAME, f'schema "{in_schema}" does not exist')
            out += sorted((f for fs in st.functions.values() for f in fs
                           if f.schema == in_schema and f.kind in self.routine_kinds), key=lambda f: f.oid)
        for ref in self.functions:
            if not sql_functions.visible(st, ref.name, ref.schema, privileges.search_path(info)) and \
                    ref.name in proc_catalog.names():
                raise PgError(FEATURE_NOT_SUPPORTED, f"privileges on built-in function {ref.name} are not supported",
                              hint="Built-in functions keep PostgreSQL's default: EXECUTE for PUBLIC. Wrap one in a "
                                   "SQL function to control who may call it.")
            fn = find_function(st, info, ref)
            assert fn is not None
            out.append(fn)
        return out

    def _relations(self, st, info) -> list[Relation]:
        out: list[Relation] = []
        for in_schema in self.in_schemas:
            if in_schema not in st.schemas:
                raise PgError(INVALID_SCHEMA_NAME, f'schema "{in_schema}" does not exist')
            kinds = "S" if self.target == "sequence" else "rvf"
            out += sorted((r for r in st.rels.values() if r.schema == in_schema and r.kind in kinds),
                          key=lambda r: r.oid)
        path = privileges.search_path(info)
        for schema, name in self.objects:
            if schema is not None and schema in st.schemas:
                privileges.check_schema(st, privileges.current_role(st, info), schema, "U")
            rel = st.lookup(schema, name) if schema else next(
                (r for s in path if (r := st.lookup(s, name)) is not None), None)
            if rel is None:
                shown = f"{schema}.{name}" if schema else name
                raise PgError(UNDEFINED_TABLE, f'relation "{shown}" does not exist')
            if self.target == "sequence" and rel.kind != "S":
                raise PgError(WRONG_OBJECT_TYPE, f'"{rel.name}" is not a sequence')
            if rel.kind == "i":
                raise PgError(WRONG_OBJECT_TYPE, f'"{rel.name}" is an index')
            out.append(rel)
        return out

    def _letters(self, ctx, cls: str, rel: Relation | None = None) -> str:
        """The requested privileges as letters valid for ``cls`` (a sequence
        named by ON TABLE keeps only its own kinds, with PostgreSQL's warning)."""
        if self.all_privs:
            return acl.ALL_RIGHTS[cls]
        if rel is not None and rel.kind == "S" and self.target == "table":
            keep = "".join(c for c in self.privs if c in acl.ALL_RIGHTS["sequence"])
            if keep != self.privs:
                ctx.notices.append(Notice(f'sequence "{rel.name}" only supports USAGE, SELECT, and UPDATE privileges',
                                          sqlstate="0LP01", severity="WARNING"))
            return keep
        for c in self.privs:
            if c not in acl.ALL_RIGHTS[cls]:
                raise PgError(INVALID_GRANT_OPERATION, f"invalid privilege type {acl.KEYWORD_OF[c]} for {cls}")
        return self.privs

    def _apply(self, ctx, me: Role, current: acl.Acl, for_grantor: acl.Acl, owner: int, wanted: str,
               denied: PgError, shown: str, grantees: list[int], all_privs: bool | None = None,
               whole: str = "") -> tuple[acl.Acl, int, str]:
        """Grant or revoke ``wanted`` on one ACL: (new ACL, grantor, the
        privileges it could give or take).  ``denied``: the 42501 when the
        grantor holds none of the ``whole`` class's privileges (restrict_and_check_grant);
        ``shown``: the object in warnings; ``all_privs``: ALL was asked (no "not all" warning)."""
        st = ctx.txn.state
        grantor, options = _best_grantor(st, me, for_grantor, owner, wanted)
        if not options:
            have, have_opts = acl.aclmask(for_grantor, acl.privileged_roles(st.roles, grantor))
            held = have | have_opts
            if not me.superuser and not (held & set(whole) if whole else held):
                raise denied
        effective = "".join(c for c in wanted if c in options)
        self._warn(ctx, effective, wanted, shown, self.all_privs if all_privs is None else all_privs)
        new = current
        for grantee in grantees:
            if self.grant:
                if self.option and effective and grantee == grantor and grantor != owner:
                    raise PgError(INVALID_GRANT_OPERATION, "grant options cannot be granted back to your own grantor")
                if effective:
                    new = acl.grant(new, grantee, grantor, effective, self.option)
            elif effective:
                new = _revoke(new, grantee, grantor, effective, self.option, self.cascade, owner)
        return new, grantor, effective

    def _warn(self, ctx, effective: str, wanted: str, shown: str, all_privs: bool) -> None:
        if self.grant:
            code, verb = WARNING_PRIVILEGE_NOT_GRANTED, "were granted"
        else:
            code, verb = WARNING_PRIVILEGE_NOT_REVOKED, "could be revoked"
        if not effective:
            ctx.notices.append(Notice(f"no privileges {verb} for {shown}", sqlstate=code, severity="WARNING"))
        elif not all_privs and set(effective) != set(wanted):
            ctx.notices.append(Notice(f"not all privileges {verb} for {shown}", sqlstate=code, severity="WARNING"))


#: A table's system columns in attnum order (-6 .. -1): a table-level REVOKE visits them.
SYSTEM_COLUMNS = ("tableoid", "cmax", "xmax", "cmin", "xmin", "ctid")
SEQUENCE_COLUMNS = ("last_value", "log_cnt", "is_called")


def _column_denied(column: str, relation: str) -> PgError:
    return PgError(INSUFFICIENT_PRIVILEGE, f'permission denied for column "{column}" of relation "{relation}"')


def _best_grantor(st, me: Role, current: acl.Acl, owner: int, wanted: str) -> tuple[int, set[str]]:
    """select_best_grantor: the owner for a superuser or the owner's members,
    else the role (``me`` first) holding grant options for most of ``wanted``."""
    if is_owner(st, me, owner):
        return owner, set(wanted)
    best, best_opts = me.oid, set[str]()
    for role in [me.oid] + sorted(acl.privileged_roles(st.roles, me.oid) - {me.oid}):
        opts = acl.options_of(current, role) & set(wanted)
        if opts == set(wanted):
            return role, opts
        if len(opts) > len(best_opts):
            best, best_opts = role, opts
    return best, best_opts


def _revoke(current: acl.Acl, grantee: int, grantor: int, privs: str, option_only: bool, cascade: bool,
            owner: int) -> acl.Acl:
    """Revoke, following PostgreSQL's recursive_revoke: privileges the
    grantee granted on with the options it loses go too (CASCADE), or the
    REVOKE fails (RESTRICT).  The owner never truly loses grant options."""
    new = acl.revoke(current, grantee, grantor, privs, option_only)
    if grantee in (acl.PUBLIC, owner):
        return new
    lost = set(privs) - acl.options_of(new, grantee)
    if not lost:
        return new
    deps = acl.dependent_grants(new, grantee, "".join(lost))
    if deps and not cascade:
        raise PgError(DEPENDENT_OBJECTS_STILL_EXIST, "dependent privileges exist",
                      hint="Use CASCADE to revoke them too.")
    for ge, _gr, p, _o in deps:
        new = _revoke(new, ge, grantee, "".join(c for c in p if c in lost), False, True, owner)
    return new


def _privilege_list(r: Reader) -> tuple[str, bool, dict[str, tuple[str, ...]]]:
    """Privileges before ON: (table-level letters, ALL, letter -> columns
    for column privileges such as ``SELECT (a, b)``)."""
    columns: dict[str, tuple[str, ...]] = {}
    if r.accept("ALL"):
        r.accept("PRIVILEGES")
        if r.accept("("):
            cols = _column_list(r)
            return "", True, {c: cols for c in acl.ALL_RIGHTS["column"]}
        return "", True, columns
    letters = ""
    while True:
        word = str(r.next())
        if word not in acl.LETTERS:
            r.i -= 1
            raise r.error()
        letter = acl.LETTERS[word]
        if r.accept("("):
            columns[letter] = columns.get(letter, ()) + _column_list(r)
        else:
            letters += letter
        if not r.accept(","):
            return acl.ordered(letters), False, columns


def _column_list(r: Reader) -> tuple[str, ...]:
    cols = tuple(r.names())
    r.expect(")")
    return cols


def _targets(r: Reader) -> tuple[str, list[tuple[str | None, str]], list[str]]:
    t = r.peek()
    word = str(t) if t is not None else ""
    if word in _ROUTINE_TARGETS:
        r.i += 1
        return "function", [], []
    if word in _UNSUPPORTED_TARGETS:
        what = "FOREIGN DATA WRAPPER / FOREIGN SERVER" if word == "FOREIGN" else word.rstrip("S")
        raise PgError(FEATURE_NOT_SUPPORTED, f"privileges on {what.lower()} objects are not supported",
                      hint="splitstream keeps privileges on tables, streams, views, sequences, schemas and "
                                   "databases.")
    if r.accept("ALL"):
        kind = r.next()
        if kind in ("FUNCTIONS", "PROCEDURES", "ROUTINES"):
            r.expect("IN", "SCHEMA")
            return "function:" + _ROUTINE_TARGETS[kind[:-1]], [], r.names()
        if kind not in ("TABLES", "SEQUENCES"):
            raise r.error()
        r.expect("IN", "SCHEMA")
        return ("table" if kind == "TABLES" else "sequence"), [], r.names()
    if r.accept("SCHEMA"):
        return "schema", [(None, n) for n in r.names()], []
    if r.accept("DATABASE"):
        return "database", [(None, n) for n in r.names()], []
    target = "sequence" if r.accept("SEQUENCE") else "table"
    r.accept("TABLE")
    objs = [r.qualified()]
    while r.accept(","):
        objs.append(r.qualified())
    return target, objs, []


def grant_statement(text: str, session) -> Stmt:
    r = Reader(text)
    grant = r.next() == "GRANT"
    option = (not grant) and r.accept("GRANT", "OPTION", "FOR")
    if not any(t == "ON" and t.kind == "word" for t in r.toks):
        if option:
            raise r.error()
        return RoleMembershipStmt.parse(r, session, grant)
    privs, all_privs, columns = _privilege_list(r)
    r.expect("ON")
    target, objs, in_schemas = _targets(r)
    refs: list[FunctionRef] = []
    kinds = ""
    if target.startswith("function:"):
        target, kinds = target.split(":")
    elif target == "function":
        refs = _function_refs(r)
    r.expect("TO" if grant else "FROM")
    grantees = [_grantee(r, session)]
    while r.accept(","):
        grantees.append(_grantee(r, session))
    grantor, cascade = None, False
    while not r.done():
        if grant and r.accept("WITH", "GRANT", "OPTION"):
            option = True
        elif r.accept("GRANTED", "BY"):
            grantor = role_spec(r, session)
        elif not grant and r.accept("CASCADE"):
            cascade = True
        elif not grant and r.accept("RESTRICT"):
            pass
        else:
            raise r.error()
    if columns and target != "table":
        raise PgError(INVALID_GRANT_OPERATION, f"invalid privilege type {acl.KEYWORD_OF[next(iter(columns))]} "
                                               f"for {target}")
    return GrantStmt(grant, privs, all_privs, target, objs, in_schemas, grantees, option, cascade, grantor, columns,
                     refs, kinds)


def _function_refs(r: Reader) -> list[FunctionRef]:
    """``f(integer, text), s.g`` after ON FUNCTION, as the function syntax reads them."""
    start = r.i
    depth = 0
    while not r.done():
        t = r.peek()
        if depth == 0 and t in ("TO", "FROM"):
            break
        depth += 1 if t == "(" else -1 if t == ")" else 0
        r.i += 1
    text = " ".join(_token_text(t) for t in r.toks[start:r.i])
    return parse_refs(FunctionReader(text))


def _token_text(t) -> str:
    if t.kind == "ident":
        return '"' + t.text.replace('"', '""') + '"'
    if t.kind == "str":
        return "'" + t.text.replace("'", "''") + "'"
    return t.text


def _grantee(r: Reader, session) -> str:
    r.accept("GROUP")
    return role_spec(r, session)
