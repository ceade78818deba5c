"""SET / SHOW / RESET of session settings (PostgreSQL's commands/variable.c).
"""
from __future__ import annotations

import re

from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import SYNTAX_ERROR, PgError

from ..api import Result, ResultColumn
from ..settings import DEFAULT_SETTINGS, DISPLAY_NAMES
from ..sql.sqltext import split_args
from .base import NoopStmt, Stmt
from .transactions import check_transaction_modes


class SetStmt(Stmt):
    cacheable = True

    def __init__(self, name: str, value: str | None, local: bool = False) -> None:
        self.name, self.value, self.local = name, value, local

    def run(self, session, ctx):
        changed = session.set_setting(self.name, self.value)
        return Result(tag="SET" if self.value is not None or True else "RESET", parameter_status=changed)


class ResetStmt(SetStmt):
    def run(self, session, ctx):
        if self.name == "all":
            changed = {}
            for k in list(session.info.settings):
                if k in DEFAULT_SETTINGS:
                    changed.update(session.set_setting(k, None))
            return Result(tag="RESET", parameter_status=changed)
        return Result(tag="RESET", parameter_status=session.set_setting(self.name, None))


class ShowStmt(Stmt):
    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, session, ctx):
        if self.name == "all":
            items = sorted(session.info.settings.items())
            b = Batch([Col.from_pylist([k for k, _ in items], type_oids.TEXT), Col.from_pylist([v for _, v in items], type_oids.TEXT),
                       Col.from_pylist(["" for _ in items], type_oids.TEXT)], len(items))
            return Result(tag="SHOW", columns=[ResultColumn("name", type_oids.TEXT), ResultColumn("setting", type_oids.TEXT),
                                               ResultColumn("description", type_oids.TEXT)], batch=b)
        v = session.show_setting(self.name)

        return Result(tag="SHOW", columns=[ResultColumn(DISPLAY_NAMES.get(self.name, self.name).lower() if self.name not in DISPLAY_NAMES else DISPLAY_NAMES[self.name], type_oids.TEXT)],
                      batch=Batch([Col.from_pylist([v], type_oids.TEXT)], 1))


def parse_set(text: str) -> Stmt:
    m = re.match(r"\s*set\s+(session\s+|local\s+)?(.*?)\s*;?\s*$", text, re.I | re.S)
    assert m is not None  # the dispatcher saw SET first; the rest may be empty
    rest = m.group(2)
    low = rest.lower()
    if low.startswith("time zone"):
        v = rest[9:].strip()
        if v.lower() in ("local", "default"):
            return SetStmt("timezone", None)
        return SetStmt("timezone", _setval(v))
    m_txn = re.match(r"(?:(?:session\s+)?characteristics\s+as\s+)?transaction\s+(.*)$", rest, re.I | re.S)
    if m_txn:
        # the only modes accepted are the ones every transaction has (READ COMMITTED, READ WRITE)
        check_transaction_modes(m_txn.group(1))
        return NoopStmt("SET")
    if low.startswith("names"):
        return SetStmt("client_encoding", _setval(rest[5:].strip()))
    if low.startswith("session authorization") or low.startswith("role"):
        return NoopStmt("SET")
    mm = re.match(r"([A-Za-z_][\w.]*)\s*(?:=|\bto\b)\s*(.*)$", rest, re.I | re.S)
    if not mm:
        raise PgError(SYNTAX_ERROR, f'syntax error at or near "{rest.split()[0] if rest.split() else "SET"}"')
    name = mm.group(1).lower()
    v = mm.group(2).strip()
    if v.lower() == "default":
        return SetStmt(name, None)
    return SetStmt(name, _setval(v))


def _setval(v: str) -> str:
    parts = split_args(v)
    out = []
    for p in parts:
        p = p.strip()
        if p.startswith("'") and p.endswith("'"):
            p = p[1:-1].replace("''", "'")
        elif p.startswith('"') and p.endswith('"'):
            p = p[1:-1]
        out.append(p)
    return ", ".join(out)
