"""PostgreSQL 15's configuration parameters as SET checks them: name ->
(vartype, unit, min, max, enum values joined by commas, boot value), read
from the generated pg15_settings.py (PostgreSQL's pg_settings); SET checks
values against it and SHOW falls back to the boot value (settings/values.py)."""
from __future__ import annotations

from .pg15_settings import PARAMETERS

TYPES: dict[str, tuple[str, str, str, str, str, str]] = {
    name: (vartype, unit or "", lo or "", hi or "", ",".join(enums or ()), boot or "")
    for name, (_, vartype, unit, _c, _s, _e, _ctx, lo, hi, enums, boot) in PARAMETERS.items()
}
