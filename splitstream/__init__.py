"""splitstream: a stream-processing database that speaks the PostgreSQL wire protocol.

The repository keeps one top-level folder per room; installed, they all live
under this one package so nothing generic lands in site-packages:

- ``splitstream.protocol``: the sans-IO PostgreSQL v3 codec (no sockets, no SQL);
- ``splitstream.server``: asyncio sessions and the command line (no SQL semantics);
- ``splitstream.catalog``: types and column batches, catalog objects and system
  catalogs, storage (WAL, checkpoints, transactions);
- ``splitstream.executor``: SQL to results, streams and continuous views;
- ``splitstream.connectors``: the PySpark connector.

``splitstream.cli`` is the composition root: the one module that joins the
server to the executor (the server knows the engine only through
``splitstream.executor.api``).  Dependencies run one way (see
docs/ARCHITECTURE.md); ``tests/test_import_graph.py`` enforces the contract.
"""
