"""executor/backends: TODO docstring."""
