"""DISTINCT in a sketch aggregate's call.

Why a module of its own: HyperLogLog answers the same with or without
DISTINCT, but a t-digest or a count-min sketch counts every row, so those
refuse it rather than ignore it; the state classes (each in its module)
share the refusal.
"""
from __future__ import annotations

from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, PgError


def refuse_distinct(spec) -> None:
    """0A000 for ``f(DISTINCT x)`` of a sketch that counts every row (t-digest,
    count-min): ignoring the DISTINCT would answer another question."""
    if spec.distinct:
        raise PgError(FEATURE_NOT_SUPPORTED, f"{spec.func}(DISTINCT ...) is not supported",
                      hint=f"A {spec.func} sketch counts every row; use {spec.func}(x).")
