"""The import contract between the rooms (issue 13), checked on the source.

The graph is computed from the AST of every product module, imports inside
functions included (they are the ones that hide cycles), with relative imports
resolved.  The checks:

* no import cycle (strongly connected component) of more than 3 modules;
* no import crossing a room boundary the contract forbids (``ROOM_RULES``);
* no bare room import (``import executor``): the rooms exist only as
  ``splitstream.<room>``, and a bare import would load a second copy;
* no import inside a function, except of an optional dependency marked
  ``# optional dependency``.

Run as a script (``python tests/test_import_graph.py``) to print the report.
"""
from __future__ import annotations

import ast
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ROOMS = ("protocol", "server", "catalog", "executor", "connectors")
PACKAGE = "splitstream"
MAX_CYCLE = 3
# The Spark connector's and COPY's optional packages (the spark extra, pyarrow), and
# uvloop, which the server uses when installed.
OPTIONAL_DEPENDENCIES = ("pyspark", "duckdb", "pyarrow", "psycopg", "pandas", "uvloop")
OPTIONAL_MARK = "optional dependency"

# What each room may import of the project, as module-name prefixes
# (a room may always import itself).
ROOM_RULES: dict[str, tuple[str, ...]] = {
    "protocol": (),
    "server": ("splitstream.protocol", "splitstream.executor.api"),
    "catalog": ("splitstream.protocol",),
    "executor": ("splitstream.catalog", "splitstream.protocol"),
    "connectors": ("splitstream.protocol", "splitstream.catalog", "splitstream.executor", "splitstream.connectors"),
}
# Sub-rooms held to a narrower rule than their room (longest prefix wins): the
# layers inside catalog/ and executor/.  A sub-room may always import itself.
CATALOG, EXECUTOR, PROTOCOL = f"{PACKAGE}.catalog", f"{PACKAGE}.executor", f"{PACKAGE}.protocol"
MODULE_RULES: dict[str, tuple[str, ...]] = {
    # catalog: types and column batches < objects and system catalogs < storage
    f"{CATALOG}.datatypes": (PROTOCOL,),
    f"{CATALOG}.objects": (PROTOCOL, f"{CATALOG}.datatypes"),
    f"{CATALOG}.storage": (PROTOCOL, f"{CATALOG}.datatypes", f"{CATALOG}.objects"),
    # executor: the contract with the server and the settings sit below everything
    f"{EXECUTOR}.api": (PROTOCOL,),
    f"{EXECUTOR}.settings": (PROTOCOL, f"{EXECUTOR}.api"),
    # execution (expressions, functions, operators, aggregates, windows) knows no
    # SQL syntax, no backend but the interface, no statement and no stream
    f"{EXECUTOR}.execution": (PROTOCOL, f"{CATALOG}.datatypes", f"{CATALOG}.objects", f"{EXECUTOR}.backends.interface"),
    f"{EXECUTOR}.backends.interface": (PROTOCOL, f"{CATALOG}.datatypes"),
    f"{EXECUTOR}.backends": (PROTOCOL, f"{CATALOG}.datatypes", f"{EXECUTOR}.execution"),
    # the SQL front end: dialect, binder, planner, decorrelation
    f"{EXECUTOR}.sql": (PROTOCOL, f"{CATALOG}.datatypes", f"{CATALOG}.objects", f"{EXECUTOR}.execution", f"{EXECUTOR}.backends.interface"),
    f"{EXECUTOR}.context": (PROTOCOL, f"{EXECUTOR}.api", f"{CATALOG}.storage", f"{EXECUTOR}.execution.run"),
    # streams, continuous views and Spark pushdown: above planning, below the commands
    f"{EXECUTOR}.stream": (PROTOCOL, CATALOG, f"{EXECUTOR}.api", f"{EXECUTOR}.settings", f"{EXECUTOR}.context", f"{EXECUTOR}.execution", f"{EXECUTOR}.sql",
                    f"{EXECUTOR}.backends"),
    # the statement dispatcher and one module per command family
    f"{EXECUTOR}.commands": (PROTOCOL, CATALOG, f"{EXECUTOR}.api", f"{EXECUTOR}.settings", f"{EXECUTOR}.context", f"{EXECUTOR}.execution", f"{EXECUTOR}.sql",
                      f"{EXECUTOR}.backends", f"{EXECUTOR}.stream", f"{EXECUTOR}.insert_batching"),
}

@dataclass(frozen=True)
class Import:
    """One import statement of a product module, resolved to a module name."""

    source: str
    target: str
    line: int
    in_function: bool
    optional: bool


def module_name(path: Path) -> str:
    """``executor/sql/planner/base.py`` -> ``splitstream.executor.sql.planner.base``."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


def product_files() -> dict[str, Path]:
    """Every product module by its installed name."""
    files: dict[str, Path] = {}
    for room in ROOMS:
        for path in sorted((REPO / room).rglob("*.py")):
            files[module_name(path)] = path
    return files


def _resolve(source: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` names (relative levels resolved)."""
    if not node.level:
        return node.module or ""
    base = source.split(".")
    drop = node.level - 1 if is_package else node.level
    base = base[: len(base) - drop]
    return ".".join(base + ([node.module] if node.module else []))


class _Collector(ast.NodeVisitor):
    """Collects the imports of one module, noting those inside functions."""

    def __init__(self, source: str, is_package: bool, lines: list[str], known: set[str]) -> None:
        self.source, self.is_package, self.lines, self.known = source, is_package, lines, known
        self.depth = 0
        self.found: list[Import] = []

    def _function(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def _add(self, target: str, node: ast.stmt) -> None:
        text = " ".join(self.lines[node.lineno - 1: (node.end_lineno or node.lineno)])
        optional = target.split(".")[0] in OPTIONAL_DEPENDENCIES and OPTIONAL_MARK in text
        self.found.append(Import(self.source, target, node.lineno, self.depth > 0, optional))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _resolve(self.source, self.is_package, node)
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            self._add(sub if sub in self.known else base, node)


def collect_imports() -> list[Import]:
    files = product_files()
    known = set(files)
    found: list[Import] = []
    for name, path in files.items():
        text = path.read_text()
        collector = _Collector(name, path.name == "__init__.py", text.splitlines(), known)
        collector.visit(ast.parse(text, str(path)))
        found.extend(collector.found)
    return found


def project_graph(imports: list[Import]) -> dict[str, set[str]]:
    """Edges between product modules only."""
    known = set(product_files())
    graph: dict[str, set[str]] = {name: set() for name in known}
    for imp in imports:
        if imp.target in known and imp.target != imp.source:
            graph[imp.source].add(imp.target)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the graph is a few hundred modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def large_cycles(imports: list[Import]) -> list[list[str]]:
    return [c for c in strongly_connected(project_graph(imports)) if len(c) > MAX_CYCLE]


def _room(module: str) -> str:
    return module.split(".")[1]


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _allowed(source: str, target: str) -> bool:
    room = _room(source)
    subroom = max((p for p in MODULE_RULES if _within(source, p)), key=len, default=None)
    if subroom is not None:
        rules = MODULE_RULES[subroom] + (subroom,)
    else:
        rules = ROOM_RULES[room] + (f"{PACKAGE}.{room}",)
    return any(_within(target, r) for r in rules)


def forbidden_crossings(imports: list[Import]) -> list[Import]:
    return [i for i in imports
            if (i.target == PACKAGE or i.target.startswith(PACKAGE + ".")) and not _allowed(i.source, i.target)]


def bare_room_imports(imports: list[Import]) -> list[Import]:
    return [i for i in imports if i.target.split(".")[0] in ROOMS]


def function_imports(imports: list[Import]) -> list[Import]:
    return [i for i in imports if i.in_function and not i.optional]


def _show(found: list[Import]) -> str:
    return "\n".join(f"{i.source}:{i.line} imports {i.target}" for i in found)


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    return collect_imports()


def test_no_cycle_longer_than_three(imports: list[Import]) -> None:
    cycles = [sorted(c) for c in large_cycles(imports)]
    assert not cycles, "import cycles of more than %d modules:\n%s" % (MAX_CYCLE, "\n".join(" ".join(c) for c in cycles))


def test_rooms_import_only_what_the_contract_allows(imports: list[Import]) -> None:
    bad = forbidden_crossings(imports)
    assert not bad, "imports across a forbidden room boundary:\n" + _show(bad)


def test_no_bare_room_import(imports: list[Import]) -> None:
    bad = bare_room_imports(imports)
    assert not bad, "rooms are imported as splitstream.<room>:\n" + _show(bad)


def test_no_import_inside_a_function(imports: list[Import]) -> None:
    bad = function_imports(imports)
    assert not bad, f"imports inside functions (only optional dependencies, marked '# {OPTIONAL_MARK}'):\n" + _show(bad)


def test_a_bare_room_name_does_not_import() -> None:
    """tests/conftest.py refuses ``import executor``: it would load a second copy."""
    with pytest.raises(ImportError, match="splitstream.executor"):
        importlib.import_module("executor")


def test_the_graph_sees_the_rooms(imports: list[Import]) -> None:
    """A guard on the checker itself: it must find the modules and their imports."""
    graph = project_graph(imports)
    assert "splitstream.executor.engine" in graph
    assert graph["splitstream.executor.engine"], "the engine imports nothing?"


def main() -> int:
    found = collect_imports()
    report = {
        "cycles": "\n".join(f"{len(c)}: {' '.join(c)}" for c in large_cycles(found)),
        "forbidden": _show(forbidden_crossings(found)),
        "bare": _show(bare_room_imports(found)),
        "in functions": _show(function_imports(found)),
    }
    for title, body in report.items():
        print(f"== {title}\n{body}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
