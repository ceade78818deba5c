"""Random differential queries: a seeded generator of SELECTs over a small
schema of edge values, run on splitstream and PostgreSQL 15 and compared
(values, column names, type OIDs, SQLSTATEs).

``schema`` holds the tables and their rows, ``exprs`` the typed expression
generator, ``queries`` the statement shapes, ``run`` the comparison loop, and
``python -m tests.sql.querygen --seeds 1-50`` runs many seeds against
servers of its own and prints every disagreement not explained by
``known``.

Beside tests/campaigns/sqlfuzz (the long campaign, with DML and random
schemas, run by hand): this one is part of ``make test`` under tests/sql, so
the backend suites run it on the vector and the LLVM backend too, and it
covers what that campaign's generator does not draw (interval columns,
window functions, session time zones, named arguments, set operations of
every kind).
"""
