"""Whether a cast exists, as PostgreSQL's find_coercion_pathway decides it
before any value is seen: a pg_cast row, an I/O conversion to or from a
string type (text, varchar, bpchar, name), an array cast by its elements.
Otherwise ``x::t`` is 42846 where it is written, also for a NULL or over
no rows. The rows are pg_cast's (``catalog/objects/cast_rows.py``), so the
catalog and the binder say the same."""
from __future__ import annotations

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.objects.cast_rows import CASTS, COVERED, FUNCTIONS
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import CANNOT_COERCE, PgError

from ..execution import expr

_OID_OF = {name: oid for oid, name in sqltypes.TYPE_NAMES.items()}
_COVERED = frozenset(_OID_OF[name] for name in COVERED if name in _OID_OF)
_PAIRS = frozenset((_OID_OF[c.source], _OID_OF[c.target]) for c in CASTS if c.source in _OID_OF and c.target in _OID_OF)
#: the casts done by a function: (source, target) -> castmethod f
_BY_FUNCTION = frozenset((_OID_OF[c.source], _OID_OF[c.target]) for c in CASTS
                         if c.method == "f" and c.source in _OID_OF and c.target in _OID_OF)
#: the cast functions by (name, argument type)
_FUNCTION_NAMES = frozenset((f.name, _OID_OF[f.arg]) for f in FUNCTIONS if f.arg in _OID_OF)
#: typcategory S: every type converts to and from them by its output and input functions
_STRINGS = frozenset((type_oids.TEXT, type_oids.VARCHAR, type_oids.BPCHAR, type_oids.NAME))
_ARRAYS = frozenset(type_oids.ARRAY_OF.values())
#: the types that are no array in any sense (int2vector and oidvector cast to their arrays)
_SCALARS = _COVERED - {type_oids.INT2VECTOR, type_oids.OIDVECTOR}


def cast_exists(src: int, dst: int) -> bool:
    """A cast from ``src`` to ``dst`` exists (types outside pg_cast's rows:
    not judged here, so taken to exist)."""
    if src == dst or src == type_oids.UNKNOWN or src in _STRINGS or dst in _STRINGS or (src, dst) in _PAIRS:
        return True
    if src in _ARRAYS and dst in _ARRAYS:
        return cast_exists(type_oids.ELEMENT_OF[src], type_oids.ELEMENT_OF[dst])
    if (src in _ARRAYS) != (dst in _ARRAYS):     # an array and a scalar (not a string): no pathway
        return (dst if src in _ARRAYS else src) not in _SCALARS
    return not ({src, dst} <= _COVERED)


def check_cast(src: int, dst: int) -> None:
    """42846 for a cast PostgreSQL has no pathway for."""
    if not cast_exists(src, dst):
        raise PgError(CANNOT_COERCE, f"cannot cast type {sqltypes.format_type(src)} to {sqltypes.format_type(dst)}")


def function_style_cast(arg: expr.Expr, dst: int, name: str) -> bool:
    """Whether ``name(arg)``, named as type ``dst``, is that cast: an
    untyped literal always; a value when the cast is binary-coercible or an
    I/O conversion (PostgreSQL's FUNCDETAIL_COERCION), or when it is done by
    a function of that name taking the value's type (pg_proc's int4(int8))."""
    src = arg.oid
    if src == type_oids.UNKNOWN:
        return isinstance(arg, expr.Const)
    if not cast_exists(src, dst):
        return False
    return (src, dst) not in _BY_FUNCTION or (name, src) in _FUNCTION_NAMES
