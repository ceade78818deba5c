"""The generated corpus files: which chapter goes to which file, with one seed.

Why one seed per chapter (derived from its name): adding a chapter or a
statement to one chapter does not reshuffle the others' choices.
"""
from __future__ import annotations

import random
import zlib
from pathlib import Path
from typing import Callable

from . import chapters, json_chapter
from .writer import Chapter

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
SEED = 15

#: file stem -> (title, chapter function)
FILES: dict[str, tuple[str, Callable[[Chapter], None]]] = {
    "80_gen_math": ("Mathematical functions and operators", chapters.math),
    "81_gen_string": ("String functions and operators", chapters.strings),
    "82_gen_binary": ("Binary string functions and operators", chapters.binary),
    "83_gen_pattern": ("Pattern matching: LIKE, SIMILAR TO, POSIX regular expressions", chapters.patterns),
    "84_gen_formatting": ("Data type formatting functions", chapters.formatting),
    "85_gen_arrays": ("Array functions and operators", chapters.arrays),
    "86_gen_aggregates": ("Aggregate functions", chapters.aggregates),
    "87_gen_windows": ("Window functions, aliased and unaliased", chapters.windows),
    "88_gen_srf": ("Set returning functions", chapters.srfs),
    "89_gen_sysinfo": ("System information functions", chapters.sysinfo),
    "90_gen_json": ("JSON functions and operators", json_chapter.json),
}


def build(stem: str) -> Chapter:
    title, fill = FILES[stem]
    ch = Chapter(stem, title, random.Random(SEED * 1_000_003 + zlib.crc32(stem.encode())))
    fill(ch)
    return ch


def write_all() -> list[tuple[Path, int]]:
    out = []
    for stem in FILES:
        ch = build(stem)
        path = CORPUS / f"{stem}.sql"
        path.write_text(ch.text(), encoding="utf-8")
        out.append((path, ch.count))
    return out
