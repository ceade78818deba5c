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


_DATA_ERRORS = (r"(interval out of range|division by zero|(bigint|integer|smallint) out of range|"
                r"value out of range: (overflow|underflow)|cannot convert infinity to \w+|numeric field overflow|"
                r"invalid input syntax for type [\w ]+|cannot subtract infinite \w+)")

KNOWN: tuple[Known, ...] = (
    Known("Dates and timestamps outside years 1..9999 (BC, 10000 and later): PostgreSQL computes them "
          "(0001-01-01 - 1 is 0001-12-31 BC), splitstream's Python datetimes stop there and it answers 22008",
          r"splitstream: ERROR 22008: (date|timestamp) (field value )?out of range"),
    Known("Evaluation scope: splitstream evaluates an expression over rows PostgreSQL's plan never shows it "
          "(PostgreSQL runs the cheapest WHERE/HAVING term first, filters below a derived table's select list, "
          "probes a correlated subquery only for the keys asked, stops at LIMIT), so only splitstream hits the "
          "row whose value fails; SQL leaves the order open",
          r"only splitstream raised an error.*splitstream: ERROR \w{5}: " + _DATA_ERRORS),
    Known("Evaluation order: both fail, on different rows' errors (which failing expression runs first is "
          "the plan's choice)",
          r"SQLSTATE (22\w{3}|0A000) != (22\w{3}|0A000).*splitstream: ERROR \w{5}: " + _DATA_ERRORS),
    Known("Evaluation order: both fail, PostgreSQL on an error its planner meets folding a constant "
          "(make_date(-44, 2, 29)) before any row",
          r"postgresql:  ERROR 22008: date field value out of range: -4\d-"),
    Known("Error precedence: PostgreSQL analyses the select list before GROUP BY, so its error there wins "
          "over our GROUP BY check (both errors are right)",
          r"splitstream: ERROR (42601: non-integer constant in GROUP BY|42P10: GROUP BY position|42803: )"
          r".*postgresql:  ERROR \w{5}"),
    Known("Constant folding: PostgreSQL's planner evaluates a constant subexpression (7 / 0, "
          "make_date(1999, 2, 31)) before any row, splitstream per row, so when no row reaches it only "
          "PostgreSQL fails",
          r"only postgresql raised an error.*splitstream: SELECT 0 .*postgresql:  ERROR \w{5}: " + _DATA_ERRORS[:-1]
          + r"|date field value out of range: [\d-]+)"),
    Known("Evaluation scope, the other way: PostgreSQL pushes a WHERE term below a join and evaluates it on "
          "rows the join then drops, splitstream filters the joined rows",
          r"^[^\n]* JOIN [^\n]* WHERE [^\n]*\n  - only postgresql raised an error.*postgresql:  ERROR \w{5}: "
          + _DATA_ERRORS),
    Known("string_agg(DISTINCT 'lit', ... ORDER BY 'lit'): PostgreSQL resolves the argument to text and leaves "
          "the ORDER BY's literal unknown, so they differ (42P10); splitstream types both as text",
          r"string_agg\(DISTINCT '[^']*', '\|' ORDER BY '[^']*'\).*postgresql:  ERROR 42P10"),
    Known("avg(float8) overflows in PostgreSQL's sum-of-squares accumulator (float8_accum) even where the "
          "mean fits (avg of 1e308 and 1 is 22003); splitstream keeps only the sum",
          r"avg\(.*only postgresql raised an error.*postgresql:  ERROR 22003: value out of range: overflow"),
    Known("timestamptz input ' -5000000000- ': PostgreSQL reads a zone displacement (22009), "
          "splitstream a syntax error (22007)",
          r"SQLSTATE 22007 != 22009"),
)


def unexplained(found: list[Disagreement]) -> list[Disagreement]:
    return [d for d in found if not any(k.matches(d) for k in KNOWN)]


def tally(found: list[Disagreement]) -> dict[str, int]:
    """How many disagreements each known entry explains (the CLI's summary)."""
    return {k.why.split(":")[0]: sum(k.matches(d) for d in found) for k in KNOWN}
