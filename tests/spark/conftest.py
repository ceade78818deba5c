"""One local[2] SparkSession for the Spark tests (Spark starts slowly)."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

PGJDBC = Path("/usr/share/java/postgresql.jar")


def _skip_reason() -> str | None:
    try:
        import pyspark  # noqa: F401
        import pandas  # noqa: F401
    except ImportError:
        return "pyspark/pandas not installed (pip install -e '.[spark]')"
    if shutil.which("java") is None:
        return "no Java runtime"
    if not PGJDBC.exists():
        return f"{PGJDBC} missing (apt-get install libpostgresql-jdbc-java)"
    return None


@pytest.fixture(scope="session")
def spark():
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    os.environ["PYSPARK_PYTHON"] = sys.executable          # executors use this interpreter (and its packages)
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("splitstream-tests")
               .config("spark.jars", str(PGJDBC))
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.memory", "1g")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
