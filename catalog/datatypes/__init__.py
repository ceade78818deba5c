"""The type system and column batches, the bottom of the catalog: type OIDs
mapped to numpy dtypes and PostgreSQL type semantics (``sqltypes``), and
``vector.Batch`` / ``Col``, the unit every operator, codec and log record
moves.  Imports nothing of the project but the protocol room."""
