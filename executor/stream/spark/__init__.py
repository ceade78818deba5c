"""executor/stream/spark: TODO docstring."""
