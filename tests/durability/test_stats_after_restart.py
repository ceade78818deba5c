"""Statistics after a restart (table_stats.py: derived, not persisted).

What a restarted server answers in pg_stats without a new ANALYZE: a table
no larger than the sample (300 x default_statistics_target rows) gives the
same rows as before, since the sample is then every live row; a larger one
gives a fresh sample's rows, exactly as a second ANALYZE would, with the
columns that do not depend on the sample (avg_width over fixed widths,
n_distinct of a column without NULLs, from its sketch) unchanged.  Never empty, never stale:
the first read after the restart rebuilds them from the table, after a
clean stop and after kill -9 alike."""
from __future__ import annotations

import pytest

from tests.support.restarts import connect, restarted

STATS = ("SELECT tablename, attname, null_frac, avg_width, n_distinct, most_common_vals::text, "
         "most_common_freqs::text, histogram_bounds::text, correlation "
         "FROM pg_stats WHERE tablename IN ('small', 'big') ORDER BY 1, 2")


@pytest.mark.parametrize("crash", [False, True])
def test_pg_stats_after_a_restart_answer_as_before(ss_server_factory, crash):
    server = ss_server_factory()
    with connect(server) as c:
        c.execute("CREATE TABLE small (a int, b text, c float8)")
        c.execute("INSERT INTO small SELECT g % 40, CASE WHEN g % 9 = 0 THEN NULL ELSE 'v' || (g % 13) END, "
                  "g / 7.0 FROM generate_series(1, 20000) g")
        c.execute("CREATE TABLE big (a int, b float8)")
        c.execute("INSERT INTO big SELECT (g * 7919) % 100003, CASE WHEN g % 5 = 0 THEN NULL ELSE g END "
                  "FROM generate_series(1, 120000) g")
        c.execute("ANALYZE")
        c.execute("DELETE FROM small WHERE a = 3")     # after ANALYZE: pg_stats follows the live rows
        before = c.execute(STATS).fetchall()
    with restarted(server, crash=crash) as c:
        after = c.execute(STATS).fetchall()
    assert [r[:2] for r in after] == [r[:2] for r in before] and len(after) == 5
    small = [r for r in before if r[0] == "small"]
    assert [r for r in after if r[0] == "small"] == small       # every live row is the sample: identical
    assert all("3" not in (r[5] or "{}").strip("{}").split(",") for r in small if r[1] == "a")
    for b, a in zip(before, after):
        if b[0] == "big":
            assert a[3] == b[3] and abs(a[2] - b[2]) < 0.03    # avg_width; null_frac of a new sample
            if b[1] == "a":
                assert a[4] == b[4]                          # n_distinct of a column without NULLs: the sketch
            assert a[7] is not None and b[7] is not None     # a histogram, from a fresh sample
