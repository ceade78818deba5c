"""The generated part of the differential corpus (issue 15, scope item 3).

``python -m tests.sql.corpus_gen`` writes ``tests/sql/corpus/8*_gen_*.sql``
from the function catalog and the chapters' operator and query lists, with a
fixed seed; ``tests/sql/test_generated_corpus.py`` fails when the files on
disk are not what the generator writes today (so a function added to the
catalog is tested by regenerating, as docs/functions.md is).
"""
