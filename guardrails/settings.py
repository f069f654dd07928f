"""Instance settings in force: a database override, else a Django setting, else the registry's default.

Every function here takes a ``SettingKey`` (or a pattern's concrete key, ``guardrails.patterns``:
``sources.<name>.max_per_second``); an old name (``guardrails.setting_keys.SETTING_ALIASES``)
is read and written as its new one, and what is stored, audited and listed is the new name.

What settings exist, their types and bounds live in ``guardrails.registry``; this module reads and
writes the values. Each process caches the (small) table: re-read at most once a second, and once
at the start of every request and worker task that reads a setting (``guardrails.cache``), so a
read that begins after a write committed — in any process — sees it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.db import transaction

from guardrails.cache import TableCache
from guardrails.models import InstanceSetting
from guardrails.patterns import pattern_specs
from guardrails.registry import (
    SETTINGS,
    SettingInvalid,
    SettingSpec,
    SettingType,
    setting_spec,
)
from guardrails.setting_keys import setting_aliases_of
from kernel.audit import audit_latest, audit_record
from kernel.deployment import deployment_named

# The whole (small) table, re-read at most once a second per process and after every request or
# task boundary (guardrails.cache): read-your-writes across processes, no query per step.
_rows = TableCache(
    lambda: dict(InstanceSetting.objects.values_list("key", "value")), fresh_per_boundary=True
)

# The shipped defaults, derived from the one registry (guardrails.registry).
DEFAULTS: dict[str, int] = {spec.key: spec.default for spec in SETTINGS}


# Values this thread reads instead of the stored ones, for a while (``settings_overridden``).
_overrides: ContextVar[dict[str, int] | None] = ContextVar(
    "guardrails_setting_overrides", default=None
)


@contextmanager
def settings_overridden(values: dict[str, int]) -> Iterator[None]:
    """Read ``values`` for these settings in this thread (and nowhere else) meanwhile: a plan's
    smaller migration slice, never a stored change another worker could see."""
    specs = [(setting_spec(key), value) for key, value in values.items()]
    checked = {spec.key: spec.check(value) for spec, value in specs}
    token = _overrides.set({**(_overrides.get() or {}), **checked})
    try:
        yield
    finally:
        _overrides.reset(token)


def setting_get(key: str) -> int:
    """The value in force: a database row, else a Django setting of the same name, else the default."""
    default = DEFAULTS.get(key)
    if default is None:
        try:
            spec = setting_spec(key)  # an old name reads its new one; a pattern's key its own
        except SettingInvalid:
            raise KeyError(f"unknown instance setting {key!r}") from None  # a programming error
        key, default = spec.key, spec.default
    overrides = _overrides.get()
    if overrides is not None and key in overrides:
        return overrides[key]
    row = _rows.get().get(key)
    if row is not None:
        return int(row)
    return _deployed(key, default)


def _deployed(key: str, default: int) -> int:
    """The Django setting for ``key``: ``PROCESSES_SLICE_MAX_ROWS`` for ``processes.slice_max_rows``,
    else one of its old names (``PROCESS_SLICE_MAX_ROWS``), else the registry's default."""
    for name in (key.replace(".", "_").upper(), *setting_aliases_of(key)):
        value = deployment_named(name)
        if value is not None:
            return int(value)
    return default


def settings_cache_clear(*args: object, **kwargs: object) -> None:
    """Forget the cached rows now and after commit (a change here, an admin save, a test's end)."""
    _rows.clear_now_and_after_commit()


SETTING_CHANGED = "setting.changed"


def _override(key: str) -> int | None:
    return InstanceSetting.objects.filter(key=key).values_list("value", flat=True).first()


@transaction.atomic
def setting_set(key: str, value: int, *, by: Any = None) -> int:
    """Store an override, in its stored form (an int; 0 or 1 for a boolean), after checking it
    against the registry (``SettingInvalid`` names the key; text is refused, not converted).

    A change is kept in the audit trail (who, when, old → new); setting the value already in
    place records nothing.
    """
    spec = setting_spec(key)
    key, parsed = spec.key, spec.check(value)
    before = _override(key)
    if before != parsed:
        InstanceSetting.objects.update_or_create(key=key, defaults={"value": parsed})
        audit_record(actor=by, action=SETTING_CHANGED, target=key, before=before, after=parsed)
    _rows.clear_now_and_after_commit()
    return parsed


@transaction.atomic
def setting_clear(key: str, *, by: Any = None) -> None:
    """Drop the override: the Django setting of that name, else the default, is in force again."""
    key = setting_spec(key).key
    before = _override(key)
    if before is not None:
        InstanceSetting.objects.filter(key=key).delete()
        audit_record(actor=by, action=SETTING_CHANGED, target=key, before=before, after=None)
    _rows.clear_now_and_after_commit()


def _shown(spec: SettingSpec, value: int) -> int | bool:
    return bool(value) if spec.type is SettingType.BOOLEAN else value


def settings_all() -> list[SettingSpec]:
    """Every setting to show: the fixed ones, then each pattern's keys (per known or stored name)."""
    return [*SETTINGS, *pattern_specs(_rows.get())]


def settings_list() -> list[dict[str, Any]]:
    """Every instance setting with the value in force, its declaration and its last change."""
    specs = settings_all()
    changes = audit_latest(action=SETTING_CHANGED, targets=[spec.key for spec in specs])
    rows = []
    for spec in specs:
        change = changes.get(spec.key)
        rows.append(
            {
                "key": spec.key,
                "value": _shown(spec, setting_get(spec.key)),
                "default": _shown(spec, spec.default),
                "type": spec.type.value,
                "min": spec.min,
                "max": spec.max,
                "group": spec.group.value,
                "description": spec.description,
                "changedAt": change.at.isoformat() if change else None,
                "changedBy": (change.actor_name or None) if change else None,
            }
        )
    return rows


@transaction.atomic
def settings_patch(changes: Any, *, by: Any) -> list[dict[str, Any]]:
    """``PATCH /v1/settings`` ``{key: value | null}``: all checked first, then all applied, or none.

    Each value is a JSON value checked strictly by its type (``SettingSpec.parse``): ``"10"`` or
    ``"off"`` is refused, never converted."""
    if not isinstance(changes, dict) or not changes:
        raise SettingInvalid("the body must be a JSON object of {key: value | null}", field="body")
    parsed: dict[str, int | None] = {}
    for name, value in changes.items():
        spec = setting_spec(name)  # an old name changes its new one
        if spec.key in parsed:
            raise SettingInvalid(
                f"{spec.key} is named twice (once by an old name)", field=name, key=spec.key
            )
        parsed[spec.key] = None if value is None else spec.parse(value)
    for key, value in parsed.items():
        if value is None:
            setting_clear(key, by=by)
        else:
            setting_set(key, value, by=by)
    return settings_list()
