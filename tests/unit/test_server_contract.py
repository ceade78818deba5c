"""The server room's boundary: it imports the protocol room and the engine
API (``splitstream.executor.api``) only, counting imports inside functions,
and the API itself imports nothing of the project but the protocol room.
The command line gets its engine from the composition root, ``splitstream.cli``."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _project_imports(path: Path) -> set[str]:
    """Every ``splitstream.*`` module a file imports, at any depth of its code."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "splitstream")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == "splitstream":
            # ``from splitstream.executor import api`` names the module ``...executor.api``
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def _outside(imports: set[str], allowed: tuple[str, ...]) -> set[str]:
    return {m for m in imports if not any(m == a or m.startswith(a + ".") for a in allowed)}


def test_server_imports_protocol_and_engine_api_only() -> None:
    allowed = ("splitstream.protocol", "splitstream.executor.api")
    bad = {p.name: _outside(_project_imports(p), allowed) for p in (ROOT / "server").glob("*.py")}
    assert not {k: v for k, v in bad.items() if v}


def test_engine_api_imports_protocol_only() -> None:
    assert not _outside(_project_imports(ROOT / "executor" / "api.py"), ("splitstream.protocol",))
