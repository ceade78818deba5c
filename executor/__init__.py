"""The executor room: SQL text to results, streams and continuous views.

* ``api``: the typed contract the server calls (the only module it imports);
* ``engine``: the Engine and its sessions, the entry point of every statement;
* ``commands``: the statement dispatcher and one module per command family;
* ``sql``: the front end (dialect, binder, planner, decorrelation);
* ``execution``: expressions, functions, operators, aggregates and windows
  over column batches, with per-run state kept apart from plans;
* ``backends``: the interface the planner and operators choose a backend
  through, and the LLVM backend behind it;
* ``stream``: ring buffers, continuous views and their split maintenance, the
  row guard, observability, and Spark pushdown (``stream.spark``).

Layers import downwards only (tests/test_import_graph.py)."""
