"""User functions as PostgreSQL prints them: pg_get_function_arguments,
pg_get_function_identity_arguments, pg_get_function_result and
pg_get_functiondef (ruleutils.c), which psql's ``\\df`` and ``\\sf`` read.

Why a module of its own: the text is catalog knowledge (a Function and the
type names), shared by pg_proc's readers in the executor; default
expressions go through the same deparser as column defaults.
"""
from __future__ import annotations

from typing import Any

from ..datatypes import sqltypes
from . import system_catalogs
from .model import Function

def user_function(state: Any, oid: int) -> Function | None:
    for fns in state.functions.values():
        for f in fns:
            if f.oid == oid:
                return f
    return None


def quote_ident(name: str) -> str:
    if name and (name[0].isalpha() or name[0] == "_") and all(c.isalnum() or c == "_" for c in name) and \
            name == name.lower():
        return name
    return '"' + name.replace('"', '""') + '"'


def arguments(fn: Function, identity: bool = False) -> str:
    """``a integer, b integer DEFAULT 1``, ``INOUT a integer, OUT c text``
    (identity: without defaults); RETURNS TABLE columns are not arguments."""
    parts = []
    for mode, name, t, default in fn.declared_params():
        text = {"o": "OUT ", "b": "INOUT "}.get(mode, "") + (quote_ident(name) + " " if name else "") + \
            sqltypes.format_type(t)
        if default and not identity:
            text += " DEFAULT " + (system_catalogs.format_default(default, t) or default)
        parts.append(text)
    return ", ".join(parts)


def procedure(fn: Function, qualified: bool = False) -> str:
    """format_procedure: ``f(integer,text)``, how PostgreSQL names a function
    as an object (hints, dependencies, cascades)."""
    name = (quote_ident(fn.schema) + "." if qualified else "") + quote_ident(fn.name)
    return f"{name}({','.join(sqltypes.format_type(t) for t in fn.arg_types)})"


def result(fn: Function) -> str:
    """``integer``, ``SETOF integer``, ``TABLE(x integer, y text)``."""
    if fn.out_names and not fn.param_modes:
        cols = ", ".join(f"{quote_ident(n)} {sqltypes.format_type(t)}" for n, t in zip(fn.out_names, fn.out_types))
        return f"TABLE({cols})"
    return ("SETOF " if fn.retset else "") + sqltypes.format_type(fn.return_type)


def _g(v: float) -> str:
    """C's %g, as PostgreSQL prints COST and ROWS."""
    return f"{v:g}"


def functiondef(fn: Function) -> str:
    """pg_get_functiondef: the CREATE OR REPLACE statement, options as
    PostgreSQL orders them, the body dollar-quoted with a tag it does not contain."""
    noun = "PROCEDURE" if fn.kind == "p" else "FUNCTION"
    out = [f"CREATE OR REPLACE {noun} {quote_ident(fn.schema)}.{quote_ident(fn.name)}({arguments(fn)})\n"]
    if fn.kind != "p":
        out.append(f" RETURNS {result(fn)}\n")
    out.append(f" LANGUAGE {fn.language}\n")
    misc = {"i": " IMMUTABLE", "s": " STABLE"}.get(fn.volatility, "") + \
        {"s": " PARALLEL SAFE", "r": " PARALLEL RESTRICTED"}.get(fn.parallel, "") + \
        (" STRICT" if fn.strict else "") + (" LEAKPROOF" if fn.leakproof else "") + \
        (f" COST {_g(fn.cost)}" if fn.cost != 100 else "") + \
        (f" ROWS {_g(fn.rows)}" if fn.rows > 0 and fn.rows != 1000 else "")
    if misc:
        out.append(misc + "\n")
    tag = "$" + noun.lower()
    while tag in fn.body:
        tag += "x"
    tag += "$"
    out.append(f"AS {tag}{fn.body}{tag}\n")
    return "".join(out)
