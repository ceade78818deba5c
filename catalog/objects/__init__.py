"""Catalog objects and system catalogs: the immutable definitions of schemas,
relations, roles and functions (``model``), the text PostgreSQL would print for
them (``definition_text``: pg_get_indexdef and the like) and the virtual
``pg_catalog`` / ``information_schema`` relations (``system_catalogs``)."""
