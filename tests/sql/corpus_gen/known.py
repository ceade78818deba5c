"""Statements of the generated corpus that are not compared, each with its reason.

Two kinds belong here, as (regular expression searched in the statement,
reason) rules:

* ``UNSPECIFIED``: what PostgreSQL itself leaves open (the order of peers
  inside a frame for order-sensitive aggregates, ...), or what depends on
  the oracle's build and locale rather than on the SQL.
* ``PENDING``: a real difference owned by other open work (``pending
  <branch>``) or not fixed yet (``open:``).  Each is a bug; the list shrinks.
"""
from __future__ import annotations

import re

UNSPECIFIED: list[tuple[str, str]] = [
]

PENDING: list[tuple[str, str]] = [
    (r"to_number\(", "open: to_number is not implemented (refused with 0A000 naming it)"),
    (r"exp\((123456789012345678901234567890|c_n\))",
     "pending h-funcs (numeric exp): exp of a huge numeric is XX000, PostgreSQL 22003 value overflows numeric format"),
]

_RULES = [(re.compile(p), r) for p, r in UNSPECIFIED + PENDING]


def reason(statement: str) -> str | None:
    """The reason a statement is not compared, or None when it must agree."""
    for pattern, why in _RULES:
        if pattern.search(statement):
            return why
    return None
