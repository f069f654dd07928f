"""The hook registry: ``before_save``, ``before_delete``, ``after_delete``.

The boundary calls ``hooks_run``; providers fill the registry. A provider is a callable
``(slot, record_type) -> list[Hook]`` so the extensions room can serve deployed hooks from its
store without the records room importing upward; plain Python hooks register directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from records.errors import HookRejection


class HookSlot(StrEnum):
    """When a hook runs: before a create or update is saved, before a delete, after a delete."""

    BEFORE_SAVE = "before_save"
    BEFORE_DELETE = "before_delete"
    AFTER_DELETE = "after_delete"


SLOTS = tuple(slot.value for slot in HookSlot)


@dataclass
class HookContext:
    """What a hook sees: the slot, the type, the operation, the record as it will be, the actor."""

    slot: str
    record_type: str
    operation: str  # create / update / delete
    record: dict[str, Any]
    changes: dict[str, Any] = field(default_factory=dict)
    actor: str | None = None
    process_run_id: str | None = None


Hook = Callable[[HookContext], None]  # raises HookRejection to refuse
Provider = Callable[[str, str], list[Hook]]

_hooks: dict[tuple[str, str], list[Hook]] = {}
_providers: list[Provider] = []


def hook_register(*, slot: str, record_type: str, hook: Hook) -> Callable[[], None]:
    """Register a Python hook; returns a function that unregisters it."""
    if slot not in SLOTS:
        raise ValueError(f"slot must be one of {SLOTS}")
    _hooks.setdefault((slot, record_type), []).append(hook)
    return lambda: _hooks[(slot, record_type)].remove(hook)


def provider_register(provider: Provider) -> None:
    if provider not in _providers:
        _providers.append(provider)


def hooks_for(slot: str, record_type: str) -> list[Hook]:
    found = list(_hooks.get((slot, record_type), ())) + list(_hooks.get((slot, "*"), ()))
    for provider in _providers:
        found.extend(provider(slot, record_type))
    return found


def hooks_run(context: HookContext) -> None:
    """Run every hook of the slot; the first rejection refuses the write."""
    for hook in hooks_for(context.slot, context.record_type):
        hook(context)


__all__ = [
    "HookContext",
    "HookRejection",
    "hook_register",
    "provider_register",
    "hooks_run",
    "SLOTS",
]
