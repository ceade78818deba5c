"""catalog/objects: TODO docstring."""
