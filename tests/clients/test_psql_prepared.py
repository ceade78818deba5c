"""psql's PREPARE / EXECUTE / DEALLOCATE (simple query, one session) print
what PostgreSQL 15 prints, the failing last EXECUTE's error included."""
from __future__ import annotations

import pytest

from .conftest import psql

SCRIPTS = {
    "deallocate": ["DEALLOCATE PREPARE p", "PREPARE p(int) AS SELECT $1 * 3 AS x", "EXECUTE p(2)", "DEALLOCATE p"],
    "deallocate all": ["PREPARE q AS SELECT 1 AS y", "DEALLOCATE ALL", "PREPARE q AS SELECT 2 AS y", "EXECUTE q",
                       "DEALLOCATE ALL"],
    "discard": ["DISCARD ALL", "PREPARE p(int) AS SELECT $1 * 3 AS x"],
}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_prepare_script_like_postgres(ss_server, pg15, name):
    body = ["PREPARE p(int) AS SELECT $1 * 3 AS x", "EXECUTE p(14)", *SCRIPTS[name], "EXECUTE p(1)"]
    ours, theirs = (psql(s.host, s.port, *body, check=False) for s in (ss_server, pg15))
    assert ours == theirs
