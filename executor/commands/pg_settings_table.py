"""pg_catalog.pg_settings over the session's settings (settings/listing.py).

Registered from the executor, not the catalog: its rows are the engine
session's values, reset values and sources, which the catalog does not know.
"""
from __future__ import annotations

from splitstream.catalog.objects.system_catalogs import TEXTARR, table
from splitstream.protocol import oids as type_oids

from ..execution import privileges
from ..settings.listing import DefaultsView, SettingsView, pg_settings_rows

_T = type_oids.TEXT
COLUMNS = [("name", _T), ("setting", _T), ("unit", _T), ("category", _T), ("short_desc", _T), ("extra_desc", _T),
           ("context", _T), ("vartype", _T), ("source", _T), ("min_val", _T), ("max_val", _T), ("enumvals", TEXTARR),
           ("boot_val", _T), ("reset_val", _T), ("sourcefile", _T), ("sourceline", type_oids.INT4),
           ("pending_restart", type_oids.BOOL)]


def settings_view(ctx) -> SettingsView:
    """The statement's session, or its bare settings when it runs without one."""
    return ctx.engine_session if ctx.engine_session is not None else DefaultsView(ctx.session.settings)


@table("pg_catalog", "pg_settings", COLUMNS)
def _pg_settings(state, ctx):
    return pg_settings_rows(settings_view(ctx), privileges.reads_all_settings(state, ctx.session))
