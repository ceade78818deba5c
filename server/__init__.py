"""The asyncio server room: listener, per-client connection state machine,
protocol sessions (prepared statements, portals, COPY), cancel, TLS and the
``splitstream`` command line.  No query semantics live here: SQL goes to an
``splitstream.executor.api.EngineSession`` and results come back as columnar batches.
The room imports only ``splitstream.protocol`` and ``splitstream.executor.api``;
the engine itself is handed in by the composition root, ``splitstream.cli``.
"""
