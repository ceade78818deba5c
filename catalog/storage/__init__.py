"""Durable storage: columnar table versions readers see without locks
(``tables``), the database state and its transactions with one ``apply_op``
for commit and replay (``database``), the write-ahead log (``wal``), its named
record types (``wal_records``) and the versioned binary codec every file on
disk uses (``records``), checkpoints and their per-table files
(``checkpoint_files``), and the typed interface through which the executor
takes part in recovery and checkpoints (``hooks``)."""
