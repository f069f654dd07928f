"""Instance settings with the seed's names and shipped defaults, read lazily from the database."""
from __future__ import annotations

from django.conf import settings as django_settings

from guardrails.cache import TableCache
from guardrails.models import InstanceSetting

# The whole (small) table, re-read at most once a second per process (guardrails.cache).
_rows = TableCache(lambda: dict(InstanceSetting.objects.values_list("key", "value")))

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
    "processes.delete_wait_budget_ms": 5 * 60 * 1000,
    "processes.enabled": 1,  # the instance-wide switch: 0 switches every process off
    # Per-run ceilings; 0 means "derived from the slice budget" (processes.ceilings).
    "processes.max_run_ms": 0,
    "processes.max_writes_per_run": 0,
    "processes.for_each_max_items": 100,
    "processes.query_timeout_ms": 30_000,
    "processes.query_slot_wait_ms": 120_000,
    "processes.query_slots": 4,
    "processes.query_max_bytes": 8 * 1024 * 1024,
    "processes.batch_max_rows": 1_000,
    "sources.max_attempts": 8,
}


def setting_get(key: str) -> int:
    """The value in force: a database row, else a Django setting of the same name, else the default."""
    if key not in DEFAULTS:
        raise KeyError(f"unknown instance setting {key!r}")
    row = _rows.get().get(key)
    if row is not None:
        return int(row)
    return int(getattr(django_settings, key.replace(".", "_").upper(), DEFAULTS[key]))


def settings_cache_clear(*args: object, **kwargs: object) -> None:
    """Forget the cached rows now and after commit (a change here, an admin save, a test's end)."""
    _rows.clear_now_and_after_commit()


def setting_set(key: str, value: int) -> None:
    if key not in DEFAULTS:
        raise KeyError(f"unknown instance setting {key!r}")
    if int(value) < 0:
        raise ValueError(f"{key} must be zero or more")
    InstanceSetting.objects.update_or_create(key=key, defaults={"value": int(value)})
    _rows.clear_now_and_after_commit()


def setting_clear(key: str) -> None:
    """Drop the database row: the Django setting of that name, else the default, is in force again."""
    if key not in DEFAULTS:
        raise KeyError(f"unknown instance setting {key!r}")
    InstanceSetting.objects.filter(key=key).delete()
    _rows.clear_now_and_after_commit()
