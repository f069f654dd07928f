"""Instance settings in force: a database override, else a Django setting, else the registry's default.

What settings exist, their types and bounds live in ``guardrails.registry``; this module reads and
writes the values, re-reading the (small) table at most once a second per process.
"""
from __future__ import annotations

from django.conf import settings as django_settings

from guardrails.cache import TableCache
from guardrails.models import InstanceSetting
from guardrails.registry import SETTINGS, setting_spec

# The whole (small) table, re-read at most once a second per process (guardrails.cache).
_rows = TableCache(lambda: dict(InstanceSetting.objects.values_list("key", "value")))

# The shipped defaults, derived from the one registry (guardrails.registry).
DEFAULTS: dict[str, int] = {spec.key: spec.default for spec in SETTINGS}


def setting_get(key: str) -> int:
    """The value in force: a database row, else a Django setting of the same name, else the default."""
    if key not in DEFAULTS:
        raise KeyError(f"unknown instance setting {key!r}")  # a programming error, not input
    row = _rows.get().get(key)
    if row is not None:
        return int(row)
    return int(getattr(django_settings, key.replace(".", "_").upper(), DEFAULTS[key]))


def settings_cache_clear(*args: object, **kwargs: object) -> None:
    """Forget the cached rows now and after commit (a change here, an admin save, a test's end)."""
    _rows.clear_now_and_after_commit()


def setting_set(key: str, value: object) -> int:
    """Store an override after checking it against the registry (``SettingInvalid`` names the key)."""
    parsed = setting_spec(key).parse(value)
    InstanceSetting.objects.update_or_create(key=key, defaults={"value": parsed})
    _rows.clear_now_and_after_commit()
    return parsed


def setting_clear(key: str) -> None:
    """Drop the database row: the Django setting of that name, else the default, is in force again."""
    setting_spec(key)
    InstanceSetting.objects.filter(key=key).delete()
    _rows.clear_now_and_after_commit()
