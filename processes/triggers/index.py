"""Which deployed processes each record type and each event name triggers: one index per process.

Built from the active process modules' ``trigger`` in one query and kept for
``extensions.store.SERVED_TTL_S`` (30 s), like the deployed hooks' index: a deploy or remove in
this process forgets it at once (``store_forget``), other processes catch up within the TTL. So the
boundary asks it on every write of a type nobody watches for the price of a dict lookup.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from extensions.models import ExtensionKind, ExtensionModule, ExtensionStatus
from extensions.store import SERVED_TTL_S
from processes.triggers.shape import EventTrigger, RecordTrigger, trigger_of


@dataclass(frozen=True)
class TriggerIndex:
    built_at: float
    records: dict[str, tuple[RecordTrigger, ...]] = field(default_factory=dict)
    events: dict[str, tuple[EventTrigger, ...]] = field(default_factory=dict)


_lock = threading.Lock()
_index: TriggerIndex | None = None
_generation = 0  # bumped by every forget: an index built from before it is not kept


def trigger_index_forget() -> None:
    global _index, _generation
    with _lock:
        _index = None
        _generation += 1


def _build(now: float) -> TriggerIndex:
    records: dict[str, list[RecordTrigger]] = {}
    events: dict[str, list[EventTrigger]] = {}
    rows = (
        ExtensionModule.objects.filter(kind=ExtensionKind.PROCESS, status=ExtensionStatus.ACTIVE)
        .order_by("id")
        .values_list("id", "definition__trigger")
    )
    for process_id, trigger in rows:
        found = trigger_of(process_id, {"trigger": trigger})
        if isinstance(found, RecordTrigger):
            records.setdefault(found.record_type, []).append(found)
        elif isinstance(found, EventTrigger):
            events.setdefault(found.event, []).append(found)
    return TriggerIndex(
        built_at=now,
        records={name: tuple(found) for name, found in records.items()},
        events={name: tuple(found) for name, found in events.items()},
    )


def trigger_index() -> TriggerIndex:
    """The index, rebuilt when it is older than the TTL or was forgotten (≤30 s stale)."""
    global _index
    now = time.monotonic()
    index = _index
    if index is None or now - index.built_at >= SERVED_TTL_S:
        generation = _generation
        index = _build(now)
        with _lock:
            if generation == _generation:
                _index = index
    return index


def record_triggers(record_type: str) -> tuple[RecordTrigger, ...]:
    return trigger_index().records.get(record_type, ())


def event_triggers(name: str) -> tuple[EventTrigger, ...]:
    return trigger_index().events.get(name, ())
