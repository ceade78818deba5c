"""PostgreSQL 15's contexts of its configuration parameters (pg_settings.context),
for the ones a session cannot simply SET: ALTER ROLE / DATABASE ... SET refuses
them as PostgreSQL's set_config_option does (the others are 'user').  Read
from settings/pg15_settings.py (``is_superuser``, hidden from pg_settings, is
internal).
"""
from __future__ import annotations

from ..settings.pg15_settings import PARAMETERS


def _contexts() -> dict[str, frozenset[str]]:
    by_context: dict[str, set[str]] = {"internal": {"is_superuser"}}
    for name, param in PARAMETERS.items():
        if param[6] != "user":
            by_context.setdefault(param[6], set()).add(name)
    return {context: frozenset(names) for context, names in by_context.items()}


CONTEXTS: dict[str, frozenset[str]] = _contexts()

#: context -> PostgreSQL's refusal when a role or database setting names it (55P02)
CANT_CHANGE_RUNTIME_PARAM = "55P02"

REFUSALS = {
    "internal": 'parameter "{}" cannot be changed',
    "postmaster": 'parameter "{}" cannot be changed without restarting the server',
    "sighup": 'parameter "{}" cannot be changed now',
    "backend": 'parameter "{}" cannot be set after connection start',
    "superuser-backend": 'parameter "{}" cannot be set after connection start',
}


def context_of(name: str) -> str:
    """'user' for a parameter any session may SET (and placeholders)."""
    for context, names in CONTEXTS.items():
        if name in names:
            return context
    return "user"
