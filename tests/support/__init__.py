"""Shared test infrastructure: server processes (servers.py) and the
PostgreSQL-vs-splitstream differential harness (diff.py).

Kept out of conftest.py so that benchmarks and ad-hoc scripts can import it too.
"""
