"""Column defaults as PostgreSQL prints them (pg_attrdef.adbin, information_schema).

The catalog keeps a default as SQL text and leaves the printing to a formatter
slot; this module fills it, since printing needs the SQL front end."""
from __future__ import annotations

import sqlglot
from sqlglot import exp

from splitstream.catalog.objects import system_catalogs as system
from splitstream.catalog.datatypes import sqltypes
from splitstream.protocol import oids as type_oids

from .binder import datatype_to_oid, func_args, func_name
from .dialect import DIALECT

# ----------------------------------------------------------------- column defaults
# pg_attrdef.adbin / information_schema.columns.column_default hold the default
# as PostgreSQL's ruleutils prints the stored expression: constants carry an
# explicit cast unless they are plain int4/numeric/bool, string arguments of
# functions are resolved to text, and so on.  We keep the default as SQL text,
# so this re-prints that text the way PostgreSQL would.

_INT4_MIN, _INT4_MAX = -2**31, 2**31 - 1


def _const_type_name(oid: int) -> str:
    if oid == type_oids.BPCHAR:
        return "bpchar"
    return sqltypes.format_type(oid, -1)


def _number_text(text: str, negative: bool) -> str:
    s = ("-" if negative else "") + text
    is_int = s.lstrip("-").isdigit()
    if is_int:
        v = int(s)
        if _INT4_MIN <= v <= _INT4_MAX:
            return s if v >= 0 else f"'{s}'::integer"
        return f"'{s}'::bigint"
    return s if not negative else f"'{s}'::numeric"


#: functions whose first argument is a regclass (a sequence named by a string is one)
_SEQUENCE_FUNCTIONS = frozenset({"nextval", "currval", "setval"})


def _q(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _deparse(node, target: int | None) -> str:
    if isinstance(node, exp.Paren):
        return _deparse(node.this, target)
    if isinstance(node, exp.Literal):
        if node.is_string:
            if target is None:
                return _q(node.this)
            if target in (type_oids.INT2, type_oids.INT4, type_oids.INT8, type_oids.NUMERIC) and node.this.strip().lstrip("-").replace(".", "", 1).isdigit():
                txt = node.this.strip()
                if target == type_oids.INT4 or target == type_oids.NUMERIC:
                    return _number_text(txt.lstrip("-"), txt.startswith("-"))
                return txt if not txt.startswith("-") else f"'{txt}'::{_const_type_name(target)}"
            return f"{_q(node.this)}::{_const_type_name(target)}"
        return _number_text(str(node.this), False)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return _number_text(str(node.this.this), True)
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.CurrentTimestamp):
        return "now()" if node.meta.get("now") else "CURRENT_TIMESTAMP"
    if isinstance(node, exp.CurrentDate):
        return "CURRENT_DATE"
    if isinstance(node, exp.Cast):
        oid, typmod = datatype_to_oid(node.to)
        inner = node.this
        if isinstance(inner, exp.Literal) and inner.is_string:
            return f"{_q(inner.this)}::{sqltypes.format_type(oid, typmod) if oid != type_oids.BPCHAR or typmod >= 0 else 'bpchar'}"
        return f"({_deparse(inner, None)})::{sqltypes.format_type(oid, typmod)}"
    if isinstance(node, exp.Binary) and not isinstance(node, (exp.And, exp.Or)):
        op = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.DPipe: "||"}.get(type(node))
        if op is not None:
            return f"{_deparse(node.this, None)} {op} {_deparse(node.expression, None)}"
    if isinstance(node, exp.Func):
        name = func_name(node)
        args = [a for a in func_args(node)]
        parts = [(_q(a.this) + ("::regclass" if i == 0 and name in _SEQUENCE_FUNCTIONS else "::text"))
                 if isinstance(a, exp.Literal) and a.is_string else _deparse(a, None) for i, a in enumerate(args)]
        return f"{name}({', '.join(parts)})"
    raise ValueError("not deparsed")


def pg_default_text(sql: str | None, type_oid: int, typmod: int = -1) -> str | None:
    """The default expression as PostgreSQL prints it (None for no default / DEFAULT NULL)."""
    if sql is None:
        return None

    try:
        node = sqlglot.parse_one(sql, read=DIALECT)
    except Exception:
        return sql
    if isinstance(node, exp.Null):
        return None
    try:
        return _deparse(node, type_oid)
    except Exception:
        return sql


# pg_attrdef / \d show defaults deparsed by the SQL layer; the catalog only holds the slot
system.set_default_formatter(pg_default_text)
