"""catalog/storage: TODO docstring."""
