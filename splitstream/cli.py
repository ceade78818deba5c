"""The composition root: the only module that joins the server room to the
executor room.  The server knows the engine only through
``splitstream.executor.api``; here the executor's :class:`Engine` is handed
to the server's command line as its engine factory.

``splitstream recover --data-dir D`` is the offline salvage of a damaged
WAL (the server refuses to start on corruption before the WAL's end): it
needs storage only, no engine and no server.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from splitstream.catalog.storage.database import Database
from splitstream.executor.engine import Engine
from splitstream.protocol.errors import PgError
from splitstream.server import cli


def recover(argv: list[str]) -> int:
    """``splitstream recover --data-dir D``: keep every WAL record before the
    first damaged one, drop the rest, and report what was dropped."""
    p = argparse.ArgumentParser(prog="splitstream recover", description="salvage a data directory whose WAL is "
                                "damaged: keep every record before the damage, drop the rest (run with the "
                                "server stopped)")
    p.add_argument("--data-dir", required=True, help="data directory")
    args = p.parse_args(argv)
    data_dir = Path(args.data_dir)
    if not (data_dir / "wal").is_dir():
        print(f'splitstream recover: "{data_dir}" is not a splitstream data directory (no wal/)', file=sys.stderr)
        return 1
    try:
        report = Database(data_dir).salvage_wal()
    except PgError as e:
        print(f"splitstream recover: {e.message}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"splitstream recover: {e}", file=sys.stderr)
        return 1
    for line in report.report().splitlines():
        print(f"splitstream recover: {line}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``splitstream serve ...`` (the console script and ``python -m splitstream``)
    and ``splitstream recover ...``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["recover"]:
        return recover(args[1:])
    return cli.main(Engine, args)
