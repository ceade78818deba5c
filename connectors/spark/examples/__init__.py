"""Runnable examples of the PySpark connector."""
