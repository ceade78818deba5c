"""docs/functions.md is the function catalog's table, generated from it."""
from __future__ import annotations

from pathlib import Path

from splitstream.executor.execution import proc_catalog

DOC = Path(__file__).resolve().parents[2] / "docs" / "functions.md"


def test_function_table_is_generated_from_the_catalog():
    assert DOC.read_text(encoding="utf-8") == proc_catalog.markdown_table(), (
        "docs/functions.md is out of date; regenerate it with: .venv/bin/python -c "
        "\"from splitstream.executor.execution import proc_catalog; "
        "open('docs/functions.md', 'w').write(proc_catalog.markdown_table())\"")
