"""Execution: bound expressions and functions over column batches, the
operators of a plan (scans, joins, aggregation, windows, set operations), the
plan-as-data helpers (``plans``) and per-execution state (``run``).  Knows no
SQL syntax and no statement; reaches a compiling backend only through
``backends.interface``."""
