"""The catalog room: what the database holds and how it is kept.

* ``datatypes``: the SQL type system and columnar batches (numpy arrays with
  null masks); imports nothing of the project but the protocol room;
* ``objects``: schemas, tables, streams, views, roles and functions as
  immutable definitions, and the ``pg_catalog`` / ``information_schema``
  relations clients query;
* ``storage``: table versions, the write-ahead log, checkpoints and
  transactions, in versioned on-disk formats.

It never imports the executor: what storage needs from it (stream replay,
view state, the row guard) comes in through ``storage.hooks``."""
