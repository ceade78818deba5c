"""pg_proc from the function catalog: every built-in scalar, aggregate and
window function, with its argument and result types, so ``\\dfS``,
``\\daS`` and ``pg_get_function_arguments`` describe what binds.

Why a module of its own: the catalog room may not import the executor, so
the rows are handed to ``system_catalogs.set_builtin_procs`` from here; and
aggregates and window functions bind in the planner (their own rules), so
their listed overloads are declared here, in PostgreSQL's words.
"""
from __future__ import annotations

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Col
from splitstream.catalog.objects import cast_rows, function_text, system_catalogs
from splitstream.catalog.objects.system_catalogs import ProcEntry
from splitstream.protocol import oids as type_oids

from . import functions, privileges, signatures
# the modules that register functions: importing this one loads the whole catalog
from . import array_functions, binary_functions, datetime_functions, extract, json_functions, math_functions, string_functions, system_functions, to_char, truncation, zones  # noqa: F401
from . import combine, sketches
from .aggregates import AGGREGATES

_ORDERED = ("int2", "int4", "int8", "float4", "float8", "numeric", "text", "bpchar", "date", "time", "timestamp",
            "timestamptz", "interval", "oid")
_STDDEV = "int2 -> numeric | int4 -> numeric | int8 -> numeric | numeric -> numeric | float4 -> float8 | float8 -> float8"

#: The aggregates' overloads (polymorphic ones as ``"any"``).
AGGREGATE_SIGNATURES: dict[str, str] = {
    "count": " -> int8 | any -> int8",
    "sum": "int2 -> int8 | int4 -> int8 | int8 -> numeric | float4 -> float4 | float8 -> float8 | numeric -> numeric"
           " | interval -> interval",
    "avg": "int2 -> numeric | int4 -> numeric | int8 -> numeric | float4 -> float8 | float8 -> float8"
           " | numeric -> numeric | interval -> interval",
    "min": " | ".join(f"{t} -> {t}" for t in _ORDERED),
    "max": " | ".join(f"{t} -> {t}" for t in _ORDERED),
    "bool_and": "bool -> bool", "bool_or": "bool -> bool", "every": "bool -> bool",
    "array_agg": "any -> any", "string_agg": "text, text -> text | bytea, bytea -> bytea",
    **{f: _STDDEV for f in ("stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop")},
    "percentile_cont": "float8, float8 -> float8 | float8, interval -> interval | _float8, float8 -> _float8"
                       " | _float8, interval -> _interval",
    "percentile_disc": "float8, anyelement -> anyelement | _float8, anyelement -> anyarray", "mode": "anyelement -> anyelement",
    "rank": "variadic any -> int8", "dense_rank": "variadic any -> int8", "percent_rank": "variadic any -> float8",
    "cume_dist": "variadic any -> float8",
    "json_agg": "anyelement -> json", "jsonb_agg": "anyelement -> jsonb",
    "json_object_agg": "any, any -> json", "jsonb_object_agg": "any, any -> jsonb",
    **{f: "int2 -> int2 | int4 -> int4 | int8 -> int8" for f in ("bit_and", "bit_or", "bit_xor")},
    **sketches.AGGREGATE_SIGNATURES,
    **combine.AGGREGATE_SIGNATURES,
}

#: The window functions' overloads.
WINDOW_SIGNATURES: dict[str, str] = {
    "row_number": " -> int8", "rank": " -> int8", "dense_rank": " -> int8", "percent_rank": " -> float8",
    "cume_dist": " -> float8", "ntile": "int4 -> int4",
    "lag": "any -> any | any, int4 -> any | any, int4, any -> any",
    "lead": "any -> any | any, int4 -> any | any, int4, any -> any",
    "first_value": "any -> any", "last_value": "any -> any", "nth_value": "any, int4 -> any",
}

#: Set-returning functions a later layer plans as table functions
#: (PipelineDB's ``pipelinedb.get_views()``: executor/stream/management.py),
#: declared by that layer; listed with proretset.
SET_RETURNING_SIGNATURES: dict[str, str] = {}

_FIRST_OID = 10000  # built-in functions sit below FirstNormalObjectId (16384), as PostgreSQL's do


def _volatility(fd: functions.FuncDef, sig: signatures.Signature) -> str:
    """v for volatile functions; s for the argument-less ones that read the
    session or the statement (now(), current_user); i for the rest."""
    if fd.volatile:
        return "v"
    if fd.name in _SESSION_CLOCK:
        return "s"
    return "s" if not sig.args and fd.name != "pi" else "i"


#: functions whose every overload reads the statement's clock or the session's TimeZone
_SESSION_CLOCK = {"current_time", "current_timestamp", "localtime", "localtimestamp", "current_date"}


def _scalar_entries() -> list[tuple]:
    out: list[tuple] = []
    for name in sorted(functions.REGISTRY):
        fd = functions.REGISTRY[name]
        sigs = fd.sigs or [signatures.Signature((type_oids.ANY,), type_oids.ANY, variadic=True)]
        out.extend((name, "f", fd.strict, _volatility(fd, s), s) for s in sigs)
    return out


def _declared(table: dict[str, str], kind: str) -> list[tuple]:
    return [(name, kind, False, "i", s) for name in sorted(table) for s in signatures.parse(table[name])]


#: Aggregates called WITHIN GROUP (ORDER BY ...): ordered-set ones, whose last
#: argument is the ordered one and the others direct (pg_aggregate.aggkind 'o')...
ORDERED_SET_AGGREGATES = frozenset({"percentile_cont", "percentile_disc", "mode"})
#: ... and hypothetical-set ones ('h'): rank(args) WITHIN GROUP (ORDER BY ...) and
#: kin, as aggregates (the same names are also window functions)
HYPOTHETICAL_SET_AGGREGATES = frozenset({"rank", "dense_rank", "percent_rank", "cume_dist"})


def _aggregate_kind(name: str, kind: str, sig: signatures.Signature) -> tuple[str, int]:
    """(pg_aggregate.aggkind, aggnumdirectargs) of a pg_proc row."""
    if kind != "a":
        return "n", 0
    if name in HYPOTHETICAL_SET_AGGREGATES:
        return "h", 1   # PostgreSQL's: one VARIADIC "any" direct argument
    if name in ORDERED_SET_AGGREGATES:
        return "o", max(len(sig.args) - 1, 0)
    return "n", 0


_CACHE: dict[int, list[ProcEntry]] = {}


def entries() -> list[ProcEntry]:
    """pg_proc's rows, numbered in name order (stable while the catalog is)."""
    key = len(functions.REGISTRY) * 1000 + len(SET_RETURNING_SIGNATURES)
    hit = _CACHE.get(key)
    if hit is None:
        rows = _scalar_entries() + _declared(AGGREGATE_SIGNATURES, "a") + _declared(WINDOW_SIGNATURES, "w") + \
            _declared(SET_RETURNING_SIGNATURES, "f")
        rows.sort(key=lambda r: (r[0], r[1], r[4].args))
        hit = _CACHE[key] = [
            ProcEntry(_FIRST_OID + i, name, kind, strict, vol, s.args, s.result, s.args[-1] if s.variadic else 0,
                      name in SET_RETURNING_SIGNATURES, *_aggregate_kind(name, kind, s))
            for i, (name, kind, strict, vol, s) in enumerate(rows)] + _cast_functions()
    return hit


def _cast_functions() -> list[ProcEntry]:
    """The cast functions pg_cast names (PostgreSQL's OIDs, names and
    types); a call of one binds as its function-style cast (binder.b_func)."""
    oid_of = {name: oid for oid, name in sqltypes.TYPE_NAMES.items()}
    return [ProcEntry(f.oid, f.name, "f", True, f.volatile, (oid_of[f.arg],), oid_of[f.result])
            for f in cast_rows.FUNCTIONS if f.arg in oid_of and f.result in oid_of]


def names() -> set[str]:
    """Every function name the catalog knows (scalars, aggregates, windows)."""
    return set(functions.REGISTRY) | AGGREGATES | set(AGGREGATE_SIGNATURES) | set(WINDOW_SIGNATURES)


def _by_oid(oid: int) -> ProcEntry | None:
    for e in entries():
        if e.oid == oid:
            return e
    return None


_PSEUDO_WORDS = {type_oids.ANY: '"any"', signatures.ANYELEMENT: "anyelement", signatures.ANYARRAY: "anyarray"}


def _type_word(oid: int) -> str:
    return _PSEUDO_WORDS.get(oid) or sqltypes.format_type(oid)


def function_arguments(oid: int) -> str | None:
    """pg_get_function_arguments: ``text, integer``, ``VARIADIC "any"``,
    ``double precision ORDER BY interval`` for an ordered-set aggregate."""
    e = _by_oid(oid)
    if e is None:
        return None
    words = [_type_word(a) for a in e.arg_oids]
    if e.variadic and words:
        words[-1] = "VARIADIC " + words[-1]
    if e.aggkind == "h":        # hypothetical-set: rank(VARIADIC "any" ORDER BY VARIADIC "any")
        return 'VARIADIC "any" ORDER BY VARIADIC "any"'
    if e.aggkind == "o":        # ordered-set: the direct arguments, then WITHIN GROUP's
        direct = ", ".join(words[: e.aggdirectargs])
        return (direct + " " if direct else "") + "ORDER BY " + ", ".join(words[e.aggdirectargs:])
    return ", ".join(words)


def function_result(oid: int) -> str | None:
    e = _by_oid(oid)
    return None if e is None else ("SETOF " if e.retset else "") + _type_word(e.result)


def _text_of(builtin, user):
    """A pg_get_function_* text: of a built-in entry, or of a user function (in the statement's catalog)."""
    def impl(cols, n, ctx):
        out = []
        for o in cols[0].to_pylist():
            fn = None if o is None or o < _FIRST_USER_OID else function_text.user_function(ctx.state, o)
            out.append(None if o is None else (user(fn) if fn is not None else builtin(o)))
        return Col.from_pylist(out, type_oids.TEXT)

    return impl


_FIRST_USER_OID = 16384

functions.register("pg_get_function_arguments", sigs="oid -> text")(
    _text_of(function_arguments, function_text.arguments))
functions.register("pg_get_function_identity_arguments", sigs="oid -> text")(
    _text_of(function_arguments, lambda fn: function_text.arguments(fn, identity=True)))
functions.register("pg_get_function_result", sigs="oid -> text")(_text_of(function_result, function_text.result))
@functions.register("pg_function_is_visible", sigs="oid -> bool")
def _function_is_visible(cols, n, ctx):
    """Built-ins of pg_catalog are, those of another schema (pipelinedb.*)
    when it is in the search path; a user function when its schema is in
    the search path and no schema before it holds a function of the same
    name and arguments."""
    path = privileges.search_path(ctx.session)
    qualified = {e.oid: e.name.rpartition(".")[0] for e in entries() if "." in e.name}
    out = []
    for o in cols[0].to_pylist():
        fn = None if o is None or o < _FIRST_USER_OID else function_text.user_function(ctx.state, o)
        if fn is None:
            out.append(None if o is None else o not in qualified or qualified[o] in path)
            continue
        first = next((f for s in ["pg_catalog"] + path for f in ctx.state.functions.get(fn.name, ())
                      if f.schema == s and f.arg_types == fn.arg_types), None)
        out.append(first is fn)
    return Col.from_pylist(out, type_oids.BOOL)


functions.register("pg_get_function_sqlbody", sigs="oid -> text")(
    _text_of(lambda o: None, lambda fn: None))      # SQL-standard bodies are refused: always NULL
system_catalogs.set_builtin_procs(entries)


_KIND_WORDS = {"f": "function", "a": "aggregate", "w": "window"}
_VOLATILITY_WORDS = {"i": "immutable", "s": "stable", "v": "volatile"}


def markdown_table() -> str:
    """docs/functions.md: every overload of the catalog, as pg_proc lists it."""
    lines = ["# Functions", "",
             "Generated from the function catalog (`executor/execution/proc_catalog.py`, `markdown_table()`);",
             "`tests/unit/test_function_docs.py` fails when it is out of date.", "",
             "| name | arguments | result | kind | volatility | strict |", "|---|---|---|---|---|---|"]
    for e in sorted(entries(), key=lambda e: (e.name, e.kind, e.arg_oids)):     # (cast functions among the rest)
        lines.append(f"| {e.name} | {function_arguments(e.oid) or ''} | {function_result(e.oid)} | {_KIND_WORDS[e.kind]}"
                     f" | {_VOLATILITY_WORDS[e.volatile]} | {'yes' if e.strict else 'no'} |")
    lines += ["", "## Refused", "", "PostgreSQL 15 functions of the documented chapters that a call refuses with 0A000"
              " naming them (`functions.NOT_IMPLEMENTED`).", "", "| name | hint |", "|---|---|"]
    lines += [f"| {name} | {hint} |" for name, hint in sorted(functions.NOT_IMPLEMENTED.items())]
    return "\n".join(lines) + "\n"
