"""Object names in DDL: schema-qualified names, the schema a new object goes to,
and the check that a name is free."""
from __future__ import annotations

from sqlglot import exp

from splitstream.protocol.errors import DUPLICATE_TABLE, INVALID_SCHEMA_NAME, PgError

from ..execution import privileges
from ..sql.binder import ident


def qual(table: exp.Table) -> tuple[str | None, str]:
    schema = ident(table.args.get("db")) if table.args.get("db") else None
    return schema, ident(table.this)


def target_schema(planner, schema: str | None, st) -> str:
    """The schema a new object goes to; the current role needs CREATE on it."""
    if schema is None:
        # PostgreSQL: the first schema of the search path that exists
        s = next((p for p in planner.search_path() if p in st.schemas), None)
        if s is None:
            raise PgError(INVALID_SCHEMA_NAME, "no schema has been selected to create in")
    else:
        s = schema
    if s not in st.schemas:
        raise PgError(INVALID_SCHEMA_NAME, f'schema "{s}" does not exist')
    if planner.session is not None:
        privileges.check_schema(st, privileges.current_role(st, planner.session), s, "C")
    return s


def name_taken(st, schema: str, name: str) -> None:
    if st.lookup(schema, name) is not None:
        raise PgError(DUPLICATE_TABLE, f'relation "{name}" already exists')
