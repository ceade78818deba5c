"""The pipelinedb schema is bootstrapped, and a checkpoint written before it
was (its state record lacks the schema) gains it when read back, so every
data directory has PipelineDB's schema."""
from __future__ import annotations

from splitstream.catalog.storage.database import PIPELINEDB_SCHEMA, State, bootstrap_state
from tests.support.engine import open_engine, postgres_session, result_rows


def test_old_checkpoint_state_gains_the_schema():
    old = bootstrap_state()
    del old.schemas["pipelinedb"]
    restored = State.from_record(old.to_record())
    assert restored.schemas["pipelinedb"] == PIPELINEDB_SCHEMA
    assert set(restored.schemas) == set(bootstrap_state().schemas)


def test_schema_survives_a_restart(tmp_path):
    for _ in range(2):
        with open_engine(str(tmp_path / "d")) as eng:
            es = postgres_session(eng)
            es.execute_sql("CHECKPOINT")
            assert result_rows(es, "SELECT nspname FROM pg_namespace WHERE nspname = 'pipelinedb'") == [("pipelinedb",)]
