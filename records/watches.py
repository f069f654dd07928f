"""Watches on records: the boundary tells a record type's watchers about each write it makes.

The processes room's record triggers (``trigger: { record, enters }``) are the watchers; records
may not import processes, so processes registers a provider here at ``AppConfig.ready()``. A
provider answers, for a record type, the watcher to call or None — a lookup in its own index, so a
write of a type nobody watches costs one call and a dict lookup, never a query.

A watcher is called inside the write's transaction, after the record is saved: what it does
(a triggered run's row) commits with the write and rolls back with it. It must not refuse the
write: the boundary does not catch what it raises.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from records.models import Record
from records.trail import Actor


@dataclass(frozen=True)
class RecordWritten:
    """One create or update the boundary just made, with the record's fields before it."""

    actor: Actor
    record: Record  # as saved: fields, sync_version (unique per write of this record)
    before: Mapping[str, Any] | None  # the fields before the write; None for a create


Watcher = Callable[[RecordWritten], None]
WatcherProvider = Callable[[str], Watcher | None]

_providers: list[WatcherProvider] = []


def watcher_provider_register(provider: WatcherProvider) -> None:
    if provider not in _providers:
        _providers.append(provider)


def record_written(actor: Actor, record: Record, *, before: Mapping[str, Any] | None) -> None:
    """Tell the watchers of ``record``'s type (if any) about this write."""
    for provider in _providers:
        watcher = provider(record.record_type)
        if watcher is not None:
            watcher(RecordWritten(actor=actor, record=record, before=before))


def record_watched(record_type: str) -> bool:
    """Whether a watcher watches ``record_type``: its writes must run in a transaction, which
    the watcher's own rows join."""
    return any(provider(record_type) is not None for provider in _providers)
