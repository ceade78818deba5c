"""The composition root: the only module that joins the server room to the
executor room.  The server knows the engine only through
``splitstream.executor.api``; here the executor's :class:`Engine` is handed
to the server's command line as its engine factory.
"""
from __future__ import annotations

from splitstream.executor.engine import Engine
from splitstream.server import cli


def main(argv: list[str] | None = None) -> int:
    """``splitstream serve ...`` (the console script and ``python -m splitstream``)."""
    return cli.main(Engine, argv)
