"""catalog/datatypes: TODO docstring."""
