"""executor/sql: TODO docstring."""
