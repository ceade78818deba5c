"""A view's ``late_rows`` option: 'drop' (the default) or 'keep' rows later
than its stream's watermark.

Why the choice is per stream in effect: the watermark drops late rows at the
stream, before they are staged and logged (``watermark.py``), so the WAL
holds exactly the rows every view took and replay needs no late-row decision.
A stream whose views all keep late rows therefore logs and delivers them
all; each view then keeps a late row while its window is still retained
(``retention.py`` drops it with its pane otherwise), and without a retention
for as long as the view lives.  Views of one watermarked stream that
disagree would need the WAL to tell which rows were late, so that mix is
refused.
"""
from __future__ import annotations

from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, PgError

OPTION = "late_rows"
_VALUES = ("keep", "drop")


def parse(text: str) -> bool:
    """True for 'keep'; 22023 for anything but keep/drop."""
    value = text.strip().lower()
    if value not in _VALUES:
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for option "{OPTION}": {text}',
                      hint="Use late_rows = 'keep' (rows later than the watermark count while their window is "
                           "retained) or late_rows = 'drop' (the default).")
    return value == "keep"


def keeps(rel) -> bool:
    """Does view ``rel`` keep late rows?"""
    return parse(dict(rel.options).get(OPTION, "drop"))


def stream_keeps(views: list) -> bool:
    """A stream keeps its late rows when it has views and all of them keep them."""
    return bool(views) and all(keeps(cv.rel) for cv in views)


def check_agree(view_rel, stream_name: str, others: list) -> None:
    """0A000 when ``view_rel`` and the other views of a watermarked stream disagree."""
    mine = keeps(view_rel)
    for other in others:
        if keeps(other.rel) != mine:
            raise PgError(FEATURE_NOT_SUPPORTED,
                          f'continuous view "{view_rel.name}" would {"keep" if mine else "drop"} the late rows of '
                          f'stream "{stream_name}", which view "{other.rel.name}" '
                          f'{"drops" if mine else "keeps"}',
                          hint="The rows later than a stream's WATERMARK are dropped for all its views or kept for "
                               f"all: give every view on it the same option, here WITH ({OPTION} = "
                               f"'{'keep' if keeps(other.rel) else 'drop'}').")
