"""Instance settings with the seed's names and shipped defaults, read lazily from the database."""
from __future__ import annotations

from django.conf import settings as django_settings

from guardrails.models import InstanceSetting

DEFAULTS: dict[str, int] = {
    "guardrails.max_deletes_per_min": 60,
    "guardrails.max_deletes_per_hour": 1_000,
    "guardrails.max_deletes_per_day": 5_000,
    "guardrails.max_rollback_deletes_per_min": 600,
    "guardrails.max_rollback_deletes_per_hour": 10_000,
    "guardrails.max_rollback_deletes_per_day": 50_000,
    # Slice budget and run ceilings (processes read them; they live here as policy).
    "PROCESS_SLICE_MAX_ROWS": 500,
    "PROCESS_SLICE_MAX_MS": 10 * 60 * 1000,
    "processes.slice_cap": 1000,
    "processes.sync_budget_ms": 30_000,
    "processes.await_source_budget_ms": 5 * 60 * 1000,
    "sources.max_attempts": 8,
}


def setting_get(key: str) -> int:
    """The value in force: a database row, else a Django setting of the same name, else the default."""
    if key not in DEFAULTS:
        raise KeyError(f"unknown instance setting {key!r}")
    row = InstanceSetting.objects.filter(key=key).values_list("value", flat=True).first()
    if row is not None:
        return int(row)
    return int(getattr(django_settings, key.replace(".", "_").upper(), DEFAULTS[key]))


def setting_set(key: str, value: int) -> None:
    if key not in DEFAULTS:
        raise KeyError(f"unknown instance setting {key!r}")
    if int(value) < 0:
        raise ValueError(f"{key} must be zero or more")
    InstanceSetting.objects.update_or_create(key=key, defaults={"value": int(value)})


def setting_clear(key: str) -> None:
    """Drop the database row: the Django setting of that name, else the default, is in force again."""
    if key not in DEFAULTS:
        raise KeyError(f"unknown instance setting {key!r}")
    InstanceSetting.objects.filter(key=key).delete()
