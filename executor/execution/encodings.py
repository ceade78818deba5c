"""PostgreSQL's server encodings by number (pg_wchar.h's pg_enc), and the
names pg_char_to_encoding accepts.

Why a module of its own: pg_encoding_to_char, pg_char_to_encoding and the
catalogs that show an encoding number share one table, which must be
PostgreSQL's numbering exactly (clients compare the numbers).
"""
from __future__ import annotations

ENCODING_NAMES = (
    "SQL_ASCII", "EUC_JP", "EUC_CN", "EUC_KR", "EUC_TW", "EUC_JIS_2004", "UTF8", "MULE_INTERNAL", "LATIN1", "LATIN2",
    "LATIN3", "LATIN4", "LATIN5", "LATIN6", "LATIN7", "LATIN8", "LATIN9", "LATIN10", "WIN1256", "WIN1258", "WIN866",
    "WIN874", "KOI8R", "WIN1251", "WIN1252", "ISO_8859_5", "ISO_8859_6", "ISO_8859_7", "ISO_8859_8", "WIN1250",
    "WIN1253", "WIN1254", "WIN1255", "WIN1257", "KOI8U", "SJIS", "BIG5", "GBK", "UHC", "GB18030", "JOHAB",
    "SHIFT_JIS_2004",
)

#: pg_encname_tbl's aliases (after clean_encoding_name) that are not a name above
_ALIASES = {"unicode": "UTF8", "iso88591": "LATIN1", "iso88592": "LATIN2", "iso88593": "LATIN3", "iso88594": "LATIN4",
            "iso88599": "LATIN5", "iso885910": "LATIN6", "iso885913": "LATIN7", "iso885914": "LATIN8",
            "iso885915": "LATIN9", "iso885916": "LATIN10", "win": "WIN1251", "alt": "WIN866", "koi8": "KOI8R",
            "mskanji": "SJIS", "shiftjis": "SJIS", "win932": "SJIS", "win936": "GBK", "win949": "UHC",
            "win950": "BIG5", "tcvn": "WIN1258", "tcvn5712": "WIN1258", "vscii": "WIN1258", "abc": "WIN1258"}


def _clean(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


_BY_CLEAN = {_clean(n): i for i, n in enumerate(ENCODING_NAMES)}
_BY_CLEAN.update({alias: ENCODING_NAMES.index(n) for alias, n in _ALIASES.items()})


def encoding_number(name: str) -> int:
    """pg_char_to_encoding: -1 for a name PostgreSQL does not know."""
    return _BY_CLEAN.get(_clean(name), -1)


def encoding_name(number: int) -> str:
    """pg_encoding_to_char: '' for a number that is no encoding."""
    return ENCODING_NAMES[number] if 0 <= number < len(ENCODING_NAMES) else ""
