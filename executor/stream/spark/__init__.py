"""Spark pushdown and exactly-once ingest: the ledger of applied batch keys
(``ledger``), the translation of a view's stream pipeline to Spark SQL
(``translate``), the merge of partial states shipped by executors (``merge``)
and the SQL functions the connector calls (``functions``)."""
