"""executor/execution: TODO docstring."""
