"""docs/functions.md is the function catalog's table, generated from it
(the Spark functions included: the stream layer registers them)."""
from __future__ import annotations

from pathlib import Path

from splitstream.executor.execution import proc_catalog
from splitstream.executor.stream import management
from splitstream.executor.stream.spark.functions import register_functions

DOC = Path(__file__).resolve().parents[2] / "docs" / "functions.md"
REGENERATE = (".venv/bin/python -c \"from splitstream.executor.stream.spark.functions import register_functions; "
              "register_functions(); from splitstream.executor.stream import management; management.register_functions(); "
              "from splitstream.executor.execution import proc_catalog; "
              "open('docs/functions.md', 'w').write(proc_catalog.markdown_table())\"")


def test_function_table_is_generated_from_the_catalog():
    register_functions()
    management.register_functions()
    assert DOC.read_text(encoding="utf-8") == proc_catalog.markdown_table(), (
        f"docs/functions.md is out of date; regenerate it with: {REGENERATE}")
