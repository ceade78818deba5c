"""Random differential queries: a seeded generator of SELECTs over a small
schema of edge values, run on splitstream and PostgreSQL 15 and compared
(values, column names, type OIDs, SQLSTATEs).

``schema`` holds the tables and their rows, ``exprs`` the typed expression
generator, ``queries`` the statement shapes, ``run`` the comparison loop, and
``python -m tests.sql.querygen --seeds 1-50`` runs many seeds against
servers of its own and prints every disagreement.
"""
