"""Function signatures and PostgreSQL's overload resolution.

Why a module of its own: choosing among ``round(double precision)``,
``round(numeric)`` and ``round(numeric, integer)`` for a call
``round(1)`` is PostgreSQL's ``func_select_candidate`` (parse_func.c):
exact matches first, then candidates reachable by implicit casts, ranked by
exact positions, preferred types and the type categories of ``unknown``
literals.  The function registry (``functions.py``) declares signatures as
text (``"text, int4 -> text"``) and asks :func:`select` for the one a call
binds to; every error names the function as the user wrote it and the
argument types as PostgreSQL words them.
"""
from __future__ import annotations

from dataclasses import dataclass

from splitstream.catalog.datatypes import sqltypes
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import DATATYPE_MISMATCH, FEATURE_NOT_SUPPORTED, UNDEFINED_FUNCTION, PgError

AMBIGUOUS_FUNCTION = "42725"
NO_MATCH_HINT = "No function matches the given name and argument types. You might need to add explicit type casts."
AMBIGUOUS_HINT = "Could not choose a best candidate function. You might need to add explicit type casts."

ANY = type_oids.ANY
#: polymorphic pseudo-types: one element type throughout a call, its array type
ANYELEMENT = 2283
ANYARRAY = 2277
_POLYMORPHIC = {"anyelement": ANYELEMENT, "anyarray": ANYARRAY}


@dataclass(frozen=True)
class Signature:
    """One overload: argument types, result type, and whether the last
    argument is VARIADIC (it then takes any number of trailing arguments of
    its type; ``"any"`` takes anything)."""

    args: tuple[int, ...]
    result: int
    variadic: bool = False

    def expand(self, nargs: int) -> tuple[int, ...] | None:
        """The argument types for a call with ``nargs`` arguments, or None."""
        if not self.variadic:
            return self.args if nargs == len(self.args) else None
        fixed = len(self.args) - 1
        if nargs < len(self.args):
            return None
        return self.args[:fixed] + (self.args[-1],) * (nargs - fixed)


def _type(word: str) -> int:
    word = word.strip()
    if word == "any":
        return ANY
    if word in _POLYMORPHIC:
        return _POLYMORPHIC[word]
    oid = sqltypes.oid_by_name(word)
    if oid is None:
        raise ValueError(f"unknown type {word!r} in a function signature")
    return oid


def parse(text: str) -> list[Signature]:
    """``"text -> text | text, text -> text | variadic any -> text"``."""
    out = []
    for part in text.split("|"):
        args_text, _, result = part.partition("->")
        words = [w.strip() for w in args_text.split(",") if w.strip()]
        variadic = bool(words) and words[-1].startswith("variadic ")
        if variadic:
            words[-1] = words[-1][len("variadic "):]
        out.append(Signature(tuple(_type(w) for w in words), _type(result), variadic))
    return out


# ------------------------------------------------------------ casts and categories

_NUM_ORDER = (type_oids.INT2, type_oids.INT4, type_oids.INT8, type_oids.NUMERIC, type_oids.FLOAT4, type_oids.FLOAT8)
_STRINGS = (type_oids.TEXT, type_oids.VARCHAR, type_oids.BPCHAR, type_oids.NAME)
_REG = (type_oids.REGCLASS, type_oids.REGTYPE, type_oids.REGPROC, type_oids.REGNAMESPACE, type_oids.REGROLE)

#: pg_cast rows with castcontext 'i' among the types splitstream has
_IMPLICIT: dict[int, set[int]] = {
    type_oids.DATE: {type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ},
    type_oids.TIMESTAMP: {type_oids.TIMESTAMPTZ},
    type_oids.TIME: {type_oids.INTERVAL, type_oids.TIMETZ},
    type_oids.INT4: {type_oids.OID, *_REG},
    type_oids.INT8: {type_oids.OID, *_REG},
    type_oids.INT2: {type_oids.OID, *_REG},
    type_oids.OID: set(_REG),
    type_oids.CHAR: {type_oids.TEXT},
}
for _i, _t in enumerate(_NUM_ORDER):
    _IMPLICIT.setdefault(_t, set()).update(_NUM_ORDER[_i + 1:])
for _t in _STRINGS:
    _IMPLICIT.setdefault(_t, set()).update(s for s in _STRINGS if s != _t)
for _t in _REG:
    _IMPLICIT.setdefault(_t, set()).add(type_oids.OID)

_CATEGORY = {
    **{t: "N" for t in _NUM_ORDER + (type_oids.OID,) + _REG}, **{t: "S" for t in _STRINGS},
    type_oids.BOOL: "B", type_oids.DATE: "D", type_oids.TIMESTAMP: "D", type_oids.TIMESTAMPTZ: "D", type_oids.TIME: "D", type_oids.TIMETZ: "D",
    type_oids.INTERVAL: "T", type_oids.UNKNOWN: "X", ANY: "P", ANYELEMENT: "P", ANYARRAY: "P",
}
_PREFERRED = {type_oids.FLOAT8, type_oids.OID, type_oids.TEXT, type_oids.TIMESTAMPTZ, type_oids.INTERVAL, type_oids.BOOL}


def category(oid: int) -> str:
    if oid in type_oids.ELEMENT_OF:
        return "A"
    return _CATEGORY.get(oid, "U")


def can_coerce(src: int, dst: int) -> bool:
    """Whether a call argument of type src may bind to a parameter of type dst."""
    if dst == ANYARRAY:
        return src == type_oids.UNKNOWN or src in type_oids.ELEMENT_OF
    return src == dst or dst in (ANY, ANYELEMENT) or src == type_oids.UNKNOWN or dst in _IMPLICIT.get(src, ())


def _element_type(arg_oids, expanded) -> int | None:
    """The element type a polymorphic call binds, or None when its arguments
    disagree; 42804 when only unknown literals fill its polymorphic arguments
    (PostgreSQL will not guess anyelement from 'x')."""
    seen = set()
    for a, t in zip(arg_oids, expanded):
        if a == type_oids.UNKNOWN:
            continue
        if t == ANYELEMENT:
            seen.add(a)
        elif t == ANYARRAY:
            seen.add(type_oids.ELEMENT_OF[a])
    if not seen:
        if any(t in (ANYELEMENT, ANYARRAY) for t in expanded):   # only unknown literals say
            raise PgError(DATATYPE_MISMATCH, "could not determine polymorphic type because input has type unknown")
        return type_oids.TEXT
    elem = seen.pop()
    for other in seen:
        try:
            elem = sqltypes.common_type(elem, other)
        except PgError:
            return None
    return elem


def _instantiate(oid: int, elem: int) -> int:
    if oid == ANYELEMENT:
        return elem
    if oid == ANYARRAY:
        return type_oids.ARRAY_OF.get(elem, type_oids.ARRAY_OF[type_oids.TEXT])
    return oid


def type_words(arg_oids: list[int]) -> str:
    """Argument types as PostgreSQL's error messages print them."""
    return ", ".join(sqltypes.format_type(o) for o in arg_oids)


def undefined(name: str, arg_oids: list[int]) -> PgError:
    return PgError(UNDEFINED_FUNCTION, f"function {name}({type_words(arg_oids)}) does not exist", hint=NO_MATCH_HINT)


# ------------------------------------------------------------ resolution

def select(name: str, sigs: list[Signature], arg_oids: list[int]) -> tuple[tuple[int, ...], int]:
    """The argument types a call binds to and its result type, by
    PostgreSQL's rules (polymorphic types instantiated); 42883 when no
    overload fits, 42725 when several fit equally."""
    sig, expanded = _candidate(name, sigs, arg_oids)
    if not any(t in (ANYELEMENT, ANYARRAY) for t in expanded + (sig.result,)):
        return expanded, sig.result
    if ANYARRAY in arg_oids:
        raise _anyarray_error(arg_oids, expanded, sig.result)
    elem = _element_type(arg_oids, expanded)
    if elem is None:
        raise undefined(name, arg_oids)
    return tuple(_instantiate(t, elem) for t in expanded), _instantiate(sig.result, elem)


#: how to read an anyarray value (pg_stats' arrays) as an array of its element type
ANYARRAY_HINT = "Cast it through text to an array of its element type, as in histogram_bounds::text::int[]."


def anyarray_element_error() -> PgError:
    """PostgreSQL's error for a polymorphic call (unnest(anyarray) -> anyelement)
    given a value of type anyarray itself: its element type is unknown."""
    return PgError(DATATYPE_MISMATCH, 'cannot determine element type of "anyarray" argument')


def _anyarray_error(arg_oids, expanded, result: int) -> PgError:
    """The error for a call given a value of type anyarray itself
    (pg_stats.histogram_bounds, most_common_vals): 42804 where PostgreSQL needs
    the element type too; 0A000 where PostgreSQL answers from the element type
    its values carry (array_length, cardinality) but ours, the arrays' text, lack."""
    polymorphic = [t for a, t in zip(arg_oids, expanded) if a != ANYARRAY and t in (ANYELEMENT, ANYARRAY)]
    if result in (ANYELEMENT, ANYARRAY) or polymorphic:
        return anyarray_element_error()
    return PgError(FEATURE_NOT_SUPPORTED, "functions over a value of type anyarray are not supported",
                   hint=ANYARRAY_HINT)


def _candidate(name: str, sigs: list[Signature], arg_oids: list[int]) -> tuple[Signature, tuple[int, ...]]:
    cands = [(s, e) for s in sigs if (e := s.expand(len(arg_oids))) is not None]
    for s, e in cands:
        if tuple(arg_oids) == e:
            return s, e
    cands = [(s, e) for s, e in cands if all(can_coerce(a, t) for a, t in zip(arg_oids, e))]
    if not cands:
        raise undefined(name, arg_oids)
    for rank in (_exact_count, _preferred_count):
        if len(cands) > 1:
            best = max(rank(arg_oids, e) for _, e in cands)
            cands = [(s, e) for s, e in cands if rank(arg_oids, e) == best]
    if len(cands) > 1:
        cands = _resolve_unknowns(arg_oids, cands)
    if len(cands) != 1:
        raise PgError(AMBIGUOUS_FUNCTION, f"function {name}({type_words(arg_oids)}) is not unique", hint=AMBIGUOUS_HINT)
    return cands[0]


def _exact_count(arg_oids, expanded) -> int:
    return sum(a == t for a, t in zip(arg_oids, expanded) if a != type_oids.UNKNOWN)


def _preferred_count(arg_oids, expanded) -> int:
    return sum(t in _PREFERRED for a, t in zip(arg_oids, expanded) if a != type_oids.UNKNOWN and a != t)


def _resolve_unknowns(arg_oids, cands):
    """At each unknown-literal position pick a category (string if any
    candidate takes one, else the single one offered) and keep candidates of
    that category, preferring a preferred type; then, when every typed
    argument has one type, candidates taking that type at unknown positions."""
    for i, a in enumerate(arg_oids):
        if a != type_oids.UNKNOWN:
            continue
        cats = {category(e[i]) for _, e in cands}
        cat = "S" if "S" in cats else (cats.pop() if len(cats) == 1 else None)
        if cat is None:
            return cands
        kept = [(s, e) for s, e in cands if category(e[i]) == cat]
        preferred = [(s, e) for s, e in kept if e[i] in _PREFERRED]
        cands = preferred or kept
        if len(cands) == 1:
            return cands
    known = {a for a in arg_oids if a != type_oids.UNKNOWN}
    if len(known) == 1:
        t = known.pop()
        same = [(s, e) for s, e in cands
                if all(can_coerce(t, e[i]) for i, a in enumerate(arg_oids) if a == type_oids.UNKNOWN)]
        if len(same) == 1:
            return same
    return cands
