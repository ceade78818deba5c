"""Known differences of a campaign: a data file of entries, each with a reason.

A campaign classifies every difference it finds: matched by an entry here
(counted under its id, not a failure unless the entry is switched to a hard
failure), or unexpected (a failure).  Entries live in TOML files beside the
drivers (``sql_known_differences.toml``, ``stream_known_differences.toml``)::

    [[difference]]
    id = "short-name"
    reason = "why splitstream and PostgreSQL legitimately differ (or who fixes it)"
    kind = "result"            # result | sqlstate | ss-error | pg-error | any
    statement = "regex"        # optional, re.search on the statement text
    ss_sqlstate = "22..."      # optional, re.fullmatch on splitstream's SQLSTATE
    pg_sqlstate = "22..."      # optional, the same on PostgreSQL's
    detail = "regex"           # optional, re.search on the difference text
    status = "accepted"        # accepted | expected-fix (a bug someone is fixing)

An ``expected-fix`` entry becomes a hard failure when its id is named in
``--strict`` (or the environment variable ``SPLITSTREAM_CAMPAIGN_STRICT``,
comma-separated, ``all`` for every one).
"""
from __future__ import annotations

import os
import re
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
KINDS = ("result", "sqlstate", "ss-error", "pg-error", "any")


@dataclass(frozen=True)
class Known:
    id: str
    reason: str
    kind: str
    statement: re.Pattern[str] | None
    ss_sqlstate: re.Pattern[str] | None
    pg_sqlstate: re.Pattern[str] | None
    detail: re.Pattern[str] | None
    status: str

    def matches(self, kind: str, statement: str, ss_state: str | None, pg_state: str | None, detail: str) -> bool:
        if self.kind not in ("any", kind):
            return False
        if self.statement is not None and not self.statement.search(statement):
            return False
        if self.ss_sqlstate is not None and not self.ss_sqlstate.fullmatch(ss_state or ""):
            return False
        if self.pg_sqlstate is not None and not self.pg_sqlstate.fullmatch(pg_state or ""):
            return False
        return self.detail is None or bool(self.detail.search(detail))


def _pattern(entry: dict, key: str) -> re.Pattern[str] | None:
    value = entry.get(key)
    return re.compile(value, re.DOTALL) if value else None


def load(name: str) -> list[Known]:
    """The entries of one campaign's file; a malformed entry is an error, not skipped."""
    data = tomllib.loads((HERE / name).read_text(encoding="utf-8"))
    out = []
    for entry in data.get("difference", []):
        missing = {"id", "reason", "kind"} - set(entry)
        if missing or entry["kind"] not in KINDS or not entry["reason"].strip():
            raise ValueError(f"{name}: entry {entry.get('id')!r} lacks {sorted(missing)} or has a bad kind/reason")
        out.append(Known(entry["id"], entry["reason"], entry["kind"], _pattern(entry, "statement"),
                         _pattern(entry, "ss_sqlstate"), _pattern(entry, "pg_sqlstate"), _pattern(entry, "detail"),
                         entry.get("status", "accepted")))
    return out


def strict_ids(cli: str | None = None) -> set[str]:
    raw = ",".join(x for x in (cli, os.environ.get("SPLITSTREAM_CAMPAIGN_STRICT")) if x)
    return {x.strip() for x in raw.split(",") if x.strip()}


@dataclass
class Tally:
    """What a campaign found: counts per known id, and the unexpected cases in full."""

    compared: int = 0
    agreed: int = 0
    known: Counter[str] = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)
    examples: dict[str, str] = field(default_factory=dict)

    def classify(self, entries: list[Known], strict: set[str], kind: str, statement: str,
                 ss_state: str | None, pg_state: str | None, detail: str) -> Known | None:
        """Count a difference; returns the entry that explains it, None when it is unexpected."""
        for entry in entries:
            if entry.matches(kind, statement, ss_state, pg_state, detail):
                self.known[entry.id] += 1
                self.examples.setdefault(entry.id, f"{statement}\n{detail}")
                if entry.status == "expected-fix" and (entry.id in strict or "all" in strict):
                    self.unexpected.append(f"[strict {entry.id}] {detail}")
                return entry
        self.unexpected.append(detail)
        return None

    def summary(self) -> str:
        lines = [f"compared {self.compared}, agreed {self.agreed}, known differences {sum(self.known.values())}, "
                 f"unexpected {len(self.unexpected)}"]
        lines += [f"  known {k}: {n}" for k, n in sorted(self.known.items())]
        return "\n".join(lines)
