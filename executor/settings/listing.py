"""pg_settings and SHOW ALL: every parameter, described as PostgreSQL 15
describes it (pg15_settings.py) or as splitstream describes its own
(own_settings.py), with the session's value, reset value and source.

Why one module for both: SHOW ALL is pg_settings' name, the value as SHOW
prints it and short_desc, over the same parameters in the same order, as
PostgreSQL's guc.c produces both from one table.
"""
from __future__ import annotations

from typing import Iterator, Protocol

from . import DEFAULT_SETTINGS
from .own_settings import OWN_PARAMETERS
from .pg15_settings import OVERRIDE, PARAMETERS, SUPERUSER_ONLY, Param
from . import values as setting_values
from .values import in_base_unit

#: every parameter pg_settings lists, by lower-case name, in PostgreSQL's
#: order (guc_name_compare: the names compared without regard to case)
ALL_PARAMETERS: list[tuple[str, Param]] = sorted({**PARAMETERS, **OWN_PARAMETERS}.items())

#: PostgreSQL computes these paths at start (source 'override'); splitstream
#: has no such files, so they stay at their boot value, source 'default'
_NO_FILES = frozenset({"config_file", "data_directory", "hba_file", "ident_file"})
#: the version this server reports is its own compiled-in value
_OWN_BOOT = frozenset({"server_version", "server_version_num"})


class SettingsView(Protocol):
    """What the listing reads of a session (the engine session has it)."""

    def show_setting(self, name: str, missing_ok: bool = False) -> str | None: ...

    def reset_setting_value(self, name: str) -> str: ...

    def setting_source(self, name: str) -> str | None: ...


def listed(privileged: bool) -> Iterator[tuple[str, Param]]:
    """The parameters a role sees: PostgreSQL hides its superuser-only ones
    (paths, libraries, SSL details) from other roles."""
    for key, param in ALL_PARAMETERS:
        if privileged or key not in SUPERUSER_ONLY:
            yield key, param


def shown(view: SettingsView, key: str, param: Param) -> str:
    """The parameter's value as SHOW prints it."""
    value = view.show_setting(key, missing_ok=True)
    return value if value is not None else (param[10] or "")


def source(view: SettingsView, key: str) -> str:
    """pg_settings.source: 'session' after SET (or set_config), else where
    the reset value came from ('client', 'user', 'database', ...), else
    'override' for what every transaction sets, else 'default'."""
    src = view.setting_source(key)
    if src is not None:
        return src
    return "override" if key in OVERRIDE and key not in _NO_FILES else "default"


def boot_value(key: str, param: Param) -> str | None:
    return DEFAULT_SETTINGS[key] if key in _OWN_BOOT else param[10]


def pg_settings_rows(view: SettingsView, privileged: bool) -> list[tuple]:
    """pg_settings' rows, in its columns' order (name, setting, unit,
    category, short_desc, extra_desc, context, vartype, source, min_val,
    max_val, enumvals, boot_val, reset_val, sourcefile, sourceline,
    pending_restart); setting and reset_val in the base unit."""
    rows = []
    for key, p in listed(privileged):
        name, vartype, unit, category, short_desc, extra_desc, context, lo, hi, enumvals, _ = p
        setting = in_base_unit(vartype, unit, shown(view, key, p))
        reset = in_base_unit(vartype, unit, view.reset_setting_value(key))
        rows.append((name, setting, unit, category, short_desc, extra_desc, context, vartype, source(view, key),
                     lo, hi, list(enumvals) if enumvals is not None else None, boot_value(key, p), reset,
                     None, None, False))
    return rows


def show_all_rows(view: SettingsView, privileged: bool) -> list[tuple[str, str, str]]:
    """SHOW ALL's rows: name, the value as SHOW prints it, short_desc."""
    return [(p[0], shown(view, key, p), p[4]) for key, p in listed(privileged)]


class DefaultsView:
    """A SettingsView of bare settings, for a statement run without a
    session (a continuous view's replay): every value its default."""

    def __init__(self, settings: dict[str, str]) -> None:
        self.settings = settings

    def show_setting(self, name: str, missing_ok: bool = False) -> str | None:
        value = self.settings.get(name)
        return value if value is not None else setting_values.boot_value(name)

    def reset_setting_value(self, name: str) -> str:
        value = DEFAULT_SETTINGS.get(name)
        if value is None:
            value = (PARAMETERS.get(name) or OWN_PARAMETERS[name])[10]
        return value or ""

    def setting_source(self, name: str) -> str | None:
        return None
