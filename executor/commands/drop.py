"""DROP of relations and schemas, with dependents, CASCADE and its notices.
"""
from __future__ import annotations

from sqlglot import exp

from splitstream.catalog.objects import function_text
from splitstream.catalog.objects.model import Relation
from splitstream.protocol.errors import (
    DEPENDENT_OBJECTS_STILL_EXIST,
    INVALID_SCHEMA_NAME,
    UNDEFINED_OBJECT,
    UNDEFINED_TABLE,
    WRONG_OBJECT_TYPE,
    Notice,
    PgError,
)

from ..execution import privileges
from ..sql.binder import ident
from .names import qual


def dependents(st, oid: int) -> list[Relation]:
    """Objects that must go when ``oid`` goes (views, indexes, sequences)."""
    out = []
    for r in st.rels.values():
        if r.oid == oid:
            continue
        if (r.kind == "v" or r.materialized) and oid in r.depends_on:
            out.append(r)
        elif r.kind == "i" and r.index_table == oid:
            out.append(r)
        elif r.kind == "S" and r.owned_by and r.owned_by[0] == oid:
            out.append(r)
    return out


def _refuse_required_schema(name: str) -> None:
    """pg_catalog belongs to the system and pipelinedb to the (always
    installed) pipelinedb extension: PostgreSQL's dependency errors."""
    if name == "pg_catalog":
        raise PgError(DEPENDENT_OBJECTS_STILL_EXIST,
                      "cannot drop schema pg_catalog because it is required by the database system")
    if name == "pipelinedb":
        raise PgError(DEPENDENT_OBJECTS_STILL_EXIST,
                      "cannot drop schema pipelinedb because extension pipelinedb requires it",
                      hint="You can drop extension pipelinedb instead.")


def drop(session, ctx, planner, tree: exp.Drop, text):
    kind = str(tree.args.get("kind") or "TABLE").upper()
    st = ctx.txn.for_write(ctx.check_cancel)
    notices = []
    cascade = bool(tree.args.get("cascade"))
    if kind == "SCHEMA":
        for t in tree.args.get("tables") or tree.expressions or [tree.this]:
            name = ident(t.args.get("db")) if isinstance(t, exp.Table) and t.args.get("db") else ident(t.this if isinstance(t, exp.Table) else t)
            if name not in st.schemas:
                if tree.args.get("exists"):
                    notices.append(Notice(f'schema "{name}" does not exist, skipping'))
                    continue
                raise PgError(INVALID_SCHEMA_NAME, f'schema "{name}" does not exist')
            _refuse_required_schema(name)
            privileges.require_owner(st, session.info, st.schemas[name].owner, "schema", name)
            members = [r for r in st.rels.values() if r.schema == name]
            fns = sorted((f for fs in st.functions.values() for f in fs if f.schema == name), key=lambda f: f.oid)
            fn_words = [f"function {function_text.procedure(f, qualified=True)}" for f in fns]
            if (members or fns) and not cascade:
                raise PgError(DEPENDENT_OBJECTS_STILL_EXIST, f"cannot drop schema {name} because other objects depend on it",
                              detail="\n".join([f"{kind_word(r)} {name}.{r.name} depends on schema {name}" for r in members if r.kind != "i"]
                                               + [f"{w} depends on schema {name}" for w in fn_words]),
                              hint="Use DROP ... CASCADE to drop the dependent objects too.")
            for r in members:
                drop_relation(session, ctx, r)
            for f in fns:
                ctx.txn.apply(("drop_function_oid", f.oid))
            if members or fns:
                visible = [r for r in members if r.kind not in ("i", "S") or not r.owned_by]
                notices.append(cascade_notice([r for r in visible if r.kind != "i"], name, fn_words))
            ctx.txn.apply(("drop_schema", name))
        return [n for n in notices if n]
    want = {"TABLE": "r", "VIEW": "v", "INDEX": "i", "SEQUENCE": "S", "FOREIGN TABLE": "f", "MATERIALIZED VIEW": "m"}.get(kind, "r")
    if tree.args.get("materialized"):
        want = "m"
    targets = tree.args.get("tables") or tree.expressions or [tree.this]
    for t in targets:
        schema, name = qual(t)
        rel = planner.lookup_relation(name, schema)
        if rel is None or (want == "r" and rel.kind == "f" and kind == "TABLE" and False):
            if tree.args.get("exists"):
                word = _WORD[want]
                notices.append(Notice(f'{word} "{name}" does not exist, skipping'))
                continue
            word = _WORD[want]
            raise PgError(UNDEFINED_TABLE if want != "i" else UNDEFINED_OBJECT, f'{word} "{name}" does not exist')
        if rel.relkind != want and not (want == "r" and rel.kind == "f"):
            word = _ARTICLE[want]
            raise PgError(WRONG_OBJECT_TYPE, f'"{name}" is not {word}',
                          hint=f"Use DROP {drop_word(rel)} to remove {kind_article(rel)}.")
        privileges.require_relation_owner(st, session.info, rel)
        deps = all_dependents(st, rel.oid)
        visible = [d for d in deps if d.kind == "v" or d.kind == "f" or d.materialized]
        fks = [(o, c) for o in st.rels.values() if o.kind == "r" and o.oid != rel.oid
               for c in o.constraints if c.kind == "f" and c.ref_table == rel.oid]
        if fks and not cascade and not visible:
            raise PgError(DEPENDENT_OBJECTS_STILL_EXIST, f"cannot drop table {name} because other objects depend on it",
                          detail="\n".join(f"constraint {c.name} on table {o.name} depends on table {name}" for o, c in fks),
                          hint="Use DROP ... CASCADE to drop the dependent objects too.")
        if visible and not cascade:
            raise PgError(DEPENDENT_OBJECTS_STILL_EXIST, f"cannot drop {kind_word(rel)} {name} because other objects depend on it",
                          detail="\n".join(f"{kind_word(d)} {d.name} depends on {kind_word(rel)} {name}" for d in visible),
                          hint="Use DROP ... CASCADE to drop the dependent objects too.")
        if visible:
            notices.append(cascade_notice(visible, None))
        for d in deps:
            drop_relation(session, ctx, d)
        drop_relation(session, ctx, rel)
    return [n for n in notices if n]


def all_dependents(st, oid, seen=None) -> list[Relation]:
    seen = seen if seen is not None else set()
    out = []
    for d in dependents(st, oid):
        if d.oid in seen:
            continue
        seen.add(d.oid)
        out += all_dependents(st, d.oid, seen)
        out.append(d)
    return out


def cascade_notice(rels, schema, more: list[str] | None = None, more_first: bool = False):
    """``drop cascades to ...``: relations, and other objects already worded
    (``more``: after them, or before with ``more_first``)."""
    words = [f"{kind_word(r)} {(schema + '.') if schema else ''}{r.name}" for r in rels]
    words = (more or []) + words if more_first else words + (more or [])
    if not words:
        return None
    if len(words) == 1:
        return Notice(f"drop cascades to {words[0]}")
    return Notice(f"drop cascades to {len(words)} other objects",
                  detail="\n".join(f"drop cascades to {w}" for w in words))


_WORD = {"r": "table", "v": "view", "i": "index", "S": "sequence", "f": "foreign table", "m": "materialized view"}
_ARTICLE = {"r": "a table", "v": "a view", "i": "an index", "S": "a sequence", "f": "a foreign table",
            "m": "a materialized view"}


def kind_word(r) -> str:
    return _WORD.get(r.relkind, "relation")


def kind_article(r) -> str:
    return _ARTICLE.get(r.relkind, "a relation")


def drop_relation(session, ctx, rel):
    if rel.oid not in ctx.txn.state.rels:
        return
    if rel.kind == "v" and rel.continuous:
        ctx.txn.after_commit.append(lambda oid=rel.oid: session.engine.streams.drop_view(oid))
    if rel.kind == "f":
        ctx.txn.after_commit.append(lambda oid=rel.oid: session.engine.streams.drop_stream(oid))
    # drop foreign keys in other tables that reference this table (CASCADE semantics for constraints)
    st = ctx.txn.state
    for other in list(st.rels.values()):
        if other.kind == "r" and other.oid != rel.oid and any(c.kind == "f" and c.ref_table == rel.oid for c in other.constraints):
            ctx.txn.apply(("rel", other.with_(constraints=tuple(c for c in other.constraints if not (c.kind == "f" and c.ref_table == rel.oid)))))
    if rel.kind == "i":
        tbl = st.rels.get(rel.index_table)
        if tbl is not None:
            ctx.txn.apply(("rel", tbl.with_(constraints=tuple(c for c in tbl.constraints if c.index_oid != rel.oid))))
    ctx.txn.apply(("drop_rel", rel.oid))


def drop_word(r) -> str:
    return {"r": "TABLE", "v": "VIEW", "i": "INDEX", "S": "SEQUENCE", "f": "FOREIGN TABLE",
            "m": "MATERIALIZED VIEW"}.get(r.relkind, "TABLE")
