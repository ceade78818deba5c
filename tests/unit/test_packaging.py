"""The installed distribution is one package, ``splitstream``: the rooms keep
their top-level folders in the repository but must not land in site-packages
under generic names (``server``, ``protocol``, ...)."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROOMS = ("protocol", "server", "catalog", "executor", "connectors")


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_rooms_import_under_splitstream_only(tmp_path: Path) -> None:
    ok = _run("import splitstream.server, splitstream.executor.engine, splitstream.protocol.messages", tmp_path)
    assert ok.returncode == 0, ok.stderr
    for room in ROOMS:
        bad = _run(f"import {room}", tmp_path)
        assert bad.returncode != 0 and "No module named" in bad.stderr, (room, bad.stdout, bad.stderr)


def test_python_dash_m_splitstream_serves(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "splitstream", "serve", "--help"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "--data-dir" in out.stdout, out.stderr


def test_package_list_covers_every_folder() -> None:
    """pyproject lists packages explicitly (the rooms are mapped into splitstream.*):
    a new sub-package left off the list would be missing from a built wheel."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(conf["packages"])
    mapping = conf["package-dir"]
    found = {"splitstream"}
    for room in ROOMS:
        for init in (ROOT / room).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT).parts
            found.add(".".join(("splitstream", *rel)))
        assert mapping[f"splitstream.{room}"] == room
    assert listed == found
