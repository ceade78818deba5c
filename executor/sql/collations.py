"""COLLATE clauses: which collations splitstream honours, and which types take one.

Text is compared and sorted by code point (the database's collation is "C"),
so the collations that sort that way are honoured: "default", "C" and
"POSIX" (pg_collation lists exactly these). Any other name is refused as
PostgreSQL refuses a collation it does not have (42704), with a hint, never
accepted and ignored; a COLLATE on a type without collations (integer,
timestamp, ...) is PostgreSQL's 42804.
"""
from __future__ import annotations

from splitstream.catalog.datatypes import sqltypes
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import DATATYPE_MISMATCH, UNDEFINED_OBJECT, PgError

COLLATION_MISMATCH = "42P21"

#: the collations splitstream implements: all compare by code point
HONOURED = ("default", "C", "POSIX")
#: base types with a collation (arrays of them have one too); unknown literals take one
_COLLATABLE = frozenset((type_oids.TEXT, type_oids.VARCHAR, type_oids.BPCHAR, type_oids.NAME, type_oids.UNKNOWN))
_HINT = 'splitstream compares text by code point only: the collations are "C", "POSIX" and "default".'


def honoured(name: str, schema: str | None = None) -> str:
    """``name`` (as case-folded from a COLLATE clause; ``pg_catalog`` may
    qualify it) if splitstream implements that collation, else 42704 as
    PostgreSQL for a collation it does not have."""
    if name not in HONOURED or schema not in (None, "pg_catalog"):
        shown = name if schema is None else f"{schema}.{name}"
        raise PgError(UNDEFINED_OBJECT, f'collation "{shown}" for encoding "UTF8" does not exist', hint=_HINT)
    return name


def is_collatable(type_oid: int) -> bool:
    """Whether values of ``type_oid`` have a collation (an expression of that
    type carries the explicit collation of its inputs up)."""
    return type_oids.ELEMENT_OF.get(type_oid, type_oid) in _COLLATABLE


#: an explicit collation an expression carries: its name and the cursor
#: position of the COLLATE clause that gave it (None: not known)
Explicit = tuple[str, int | None]


def merged_explicit(explicit: list[Explicit]) -> Explicit:
    """The explicit collation of an expression whose inputs carry
    ``explicit`` (in order): PostgreSQL's 42P21 when two differ, even ones
    that compare alike ("C" and "POSIX"), as merge_collation_state refuses
    them, placed at the second."""
    first = explicit[0]
    for other, position in explicit[1:]:
        if other != first[0]:
            raise PgError(COLLATION_MISMATCH,
                          f'collation mismatch between explicit collations "{first[0]}" and "{other}"', position=position)
    return first


def check_collatable(type_oid: int, position: int | None = None) -> None:
    """42804 unless values of ``type_oid`` have a collation (PostgreSQL's
    words, naming the type as format_type does; ``position``: the COLLATE
    keyword's)."""
    if not is_collatable(type_oid):
        raise PgError(DATATYPE_MISMATCH, f"collations are not supported by type {sqltypes.format_type(type_oid)}",
                      position=position)
