"""Streams and continuous views: ring-buffered stream relations (``ring_buffer``,
thesis ch. 3), split-maintained continuous views (``continuous``, thesis ch. 4)
and their ingest path (``manager``), the guard on tables a view joins
(``guard``), observability (``observability``) and Spark pushdown (``spark``)."""
