"""Connectors to other systems: the PySpark connector (``spark``)."""
