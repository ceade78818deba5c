"""The ``splitstream`` command line: ``splitstream serve [options]``.

The server room cannot import the executor, so :func:`main` takes the
engine factory; ``splitstream.cli`` (the composition root) passes it in.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from splitstream.executor.api import EngineFactory

from . import hba
from .config import ServerConfig, is_loopback
from .listener import run_server
from .tls import make_server_context

log = logging.getLogger("splitstream")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="splitstream", description="splitstream: a stream-processing database "
                                "speaking the PostgreSQL protocol")
    sub = p.add_subparsers(dest="command")
    s = sub.add_parser("serve", help="run the server")
    s.add_argument("--host", default="127.0.0.1", help="address(es) to listen on, comma-separated (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=5433, help="TCP port (default 5433)")
    s.add_argument("--data-dir", default="./data", help="data directory (default ./data)")
    s.add_argument("--password", default=None,
                   help="password of the superuser 'postgres' (or env SPLITSTREAM_PASSWORD); enables SCRAM auth")
    s.add_argument("--hba", default=None, metavar="FILE",
                   help="pg_hba.conf-like rules: who may connect from where, and how (trust, reject, "
                        "scram-sha-256, md5)")
    s.add_argument("--unix-socket-dir", default=None, metavar="DIR",
                   help="also listen on a Unix-domain socket DIR/.s.PGSQL.PORT (psql's default connection)")
    s.add_argument("--tls-cert", default=None, help="PEM certificate file (enables TLS)")
    s.add_argument("--tls-key", default=None, help="PEM private key file")
    s.add_argument("--max-connections", type=int, default=100, help="maximum concurrent sessions (default 100)")
    s.add_argument("--fsync", choices=("on", "off"), default="on", help="flush the WAL to disk on commit (default on)")
    s.add_argument("--log-level", default=os.environ.get("SPLITSTREAM_LOG_LEVEL", "INFO"),
                   help="logging level (default INFO)")
    return p


def parse_config(argv: list[str]) -> tuple[ServerConfig, str]:
    """Parse argv into a ServerConfig (exits with 2 on usage errors)."""
    parser = _parser()
    if not argv or argv[0].startswith("-"):
        argv = ["serve", *argv]  # `python -m splitstream` alone means serve
    args = parser.parse_args(argv)
    if args.command != "serve":
        parser.error(f"unknown command {args.command!r}")
    password = args.password if args.password is not None else os.environ.get("SPLITSTREAM_PASSWORD")
    if password == "":
        password = None
    if bool(args.tls_cert) != bool(args.tls_key):
        parser.error("--tls-cert and --tls-key must be given together")
    if args.max_connections < 1:
        parser.error("--max-connections must be at least 1")
    if not (0 <= args.port <= 65535):
        parser.error("--port must be between 0 and 65535")
    rules = None
    if args.hba is not None:
        try:
            rules = hba.load(args.hba, unix_socket=args.unix_socket_dir is not None)
        except hba.HbaError as e:
            print(f"splitstream: --hba {args.hba}: {e}", file=sys.stderr)
            raise SystemExit(2) from None
    cfg = ServerConfig(host=args.host, port=args.port, data_dir=args.data_dir, password=password, hba=rules,
                       tls_cert=args.tls_cert, tls_key=args.tls_key, max_connections=args.max_connections,
                       fsync=args.fsync == "on", unix_socket_dir=args.unix_socket_dir)
    if password is None and rules is None:
        exposed = [h for h in cfg.hosts if not is_loopback(h)]
        if exposed or not cfg.hosts:
            print(f"splitstream: refusing to listen on non-loopback address {', '.join(exposed) or '*'} "
                  "without a password; pass --password or set SPLITSTREAM_PASSWORD", file=sys.stderr)
            raise SystemExit(2)
    return cfg, args.log_level


def install_uvloop() -> bool:
    """Use uvloop when installed: markedly lower per-message latency."""
    try:
        import uvloop  # optional dependency: the server runs on asyncio's own loop without it
    except ImportError:
        return False
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return True


def main(engine_factory: EngineFactory, argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: the process's), then serve with an engine from ``engine_factory``."""
    cfg, level = parse_config(list(sys.argv[1:] if argv is None else argv))
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, str(level).upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    install_uvloop()
    if cfg.tls_files is not None:
        try:
            make_server_context(*cfg.tls_files)
        except (OSError, ValueError) as e:
            print(f"splitstream: cannot load TLS certificate/key: {e}", file=sys.stderr)
            return 2
    try:
        return asyncio.run(run_server(cfg, engine_factory))
    except KeyboardInterrupt:  # pragma: no cover - signal arrived before handlers were set
        return 0

