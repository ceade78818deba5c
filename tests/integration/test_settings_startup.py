"""Settings given in the startup packet get SET's checks (issue 14): a
PipelineDB setting splitstream cannot honour refuses the connection with
0A000 and a hint, an unknown name with 42704; a placeholder of another
prefix is accepted and readable."""
from __future__ import annotations

import psycopg
import pytest


@pytest.mark.parametrize("options, message", [
    # psycopg reports no SQLSTATE for a failed connection: the messages tell 0A000 from 42704
    ("-c pipelinedb.stream_targets=v1,,v2", 'FATAL:  invalid value for parameter "pipelinedb.stream_targets": "v1,,v2"'),
    ("-c pipelinedb.num_workers=0",
     'FATAL:  0 is outside the valid range for parameter "pipelinedb.num_workers" (1 .. 1024)'),
    ("-c banana=1", 'FATAL:  unrecognized configuration parameter "banana"'),
    ("-c splitstream.banana=1", 'FATAL:  unrecognized configuration parameter "splitstream.banana"'),
])
def test_startup_option_refused(ss_server, options, message):
    with pytest.raises(psycopg.OperationalError) as err:
        psycopg.connect(ss_server.dsn, options=options, connect_timeout=10)
    assert message in str(err.value), str(err.value)


def test_startup_placeholder_accepted(ss_server):
    with psycopg.connect(ss_server.dsn, options="-c myapp.tenant=acme -c pipelinedb.stream_insert_level=sync_commit",
                         connect_timeout=10) as conn:
        assert conn.execute("SELECT current_setting('myapp.tenant')").fetchone() == ("acme",)
        assert conn.execute("SHOW pipelinedb.stream_insert_level").fetchone() == ("sync_commit",)
