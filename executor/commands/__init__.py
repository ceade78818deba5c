"""The statement dispatcher and one module per command family, laid out like
PostgreSQL's tcop/utility.c and commands/.

``dispatch`` turns SQL text into a ``Stmt`` (``base``); it imports the command
modules (transactions, settings, prepare, copy, cursors, explain, dml, and DDL by
object kind: tables, views, streams, roles, schemas, drop), which import only
``base`` and the layers below (planner, binder, operators), never the dispatcher.
"""
