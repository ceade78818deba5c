"""Disagreements with PostgreSQL the random queries find and we have not
fixed yet, each with why, matched by a pattern over the statement and the
two outcomes. Entries are the exception: a wrong value is fixed, not
listed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .run import Disagreement


@dataclass(frozen=True)
class Known:
    """A known difference: ``pattern`` searched in the report of a disagreement."""

    why: str
    pattern: str

    def matches(self, d: Disagreement) -> bool:
        return re.search(self.pattern, d.report(), re.DOTALL) is not None


KNOWN: tuple[Known, ...] = ()


def unexplained(found: list[Disagreement]) -> list[Disagreement]:
    return [d for d in found if not any(k.matches(d) for k in KNOWN)]


def unused(found: list[Disagreement]) -> list[Known]:
    return [k for k in KNOWN if not any(k.matches(d) for d in found)]
