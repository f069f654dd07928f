"""The records a group's updates and deletes change, read once for the whole group.

A grouped update or delete by ``pgRowId`` of a type with nothing to run on the record before
the write — no ``before_save`` (update) or ``before_delete`` (delete) hook, not connected, no
``expectedSyncVersion`` — is made ready without reading its record (``read_later``): its checks
that need no record (payload, entitlement, guardrail rule) run at once, and its step is answered
with the outcome it will have (its record's ``externalId`` taken as none). The group's records
are then read in one query just before its statement (``group_reads``), through the writer's
row-level-security scope (``records.policies.records_writable``, built once per type for the
user, who lives for one delivery), and each write is completed from what was read: the version
the statement guards, the merged fields, the ``after_delete`` snapshot.

A record not found there (gone, hidden, or out of the writer's reach) or whose ``externalId`` is
not the one its step was answered with stops the group at that write: the statement writes the
writes before it and the step is made again alone (``GroupStale``), where it is refused, or
answered with what it reads, exactly as a step made alone is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from records.catalog import RecordType
from records.hooks import HookSlot, hooks_for
from records.models import Record
from records.policies import records_writable
from records.trail import Actor
from records.write_rules import record_snapshot


@dataclass
class ReadLater:
    """A grouped write made ready before its record was read: the ``parent`` an update merges
    into it (None for a delete) and the type's scope the group reads it through."""

    record_type: RecordType
    parent: dict | None = None


def read_later(rt: RecordType, slot: HookSlot, expected_version: int | None = None) -> bool:
    """Whether a grouped update (``slot`` ``BEFORE_SAVE``) or delete (``BEFORE_DELETE``) of
    ``rt`` may be made ready without its record: nothing runs on the record before the write."""
    return not rt.is_connected and expected_version is None and not hooks_for(slot, rt.name)


def record_stub(rt: RecordType, pg_row_id: Any) -> Record:
    """The record a write made ready before its read names (its id; ``group_reads`` replaces it)."""
    return Record(pg_row_id=pg_row_id, record_type=rt.name)


def writable_rows(actor: Actor, rt: RecordType) -> QuerySet[Record]:
    """``records_writable`` for the actor's user and ``rt``, built once and remembered on the
    user object (it lives for one request or one delivery, as ``default_group`` is), under the
    policies it was built from. The group membership is a subquery: read at each use."""
    memo = actor.user.__dict__.setdefault("_tb_writable", {})
    key = (rt.name, rt.read_policy, rt.write_policy)
    rows = memo.get(key)
    if rows is None:
        rows = memo[key] = records_writable(user=actor.user, record_type=rt)
    return rows


def group_reads(writes: list[Any]) -> int | None:
    """Read the records of ``writes`` made ready before their read (``ReadLater``), one query
    per user and type, and complete each write; None when all were found as answered, else the
    position of the first that was not (the writes before it are completed)."""
    later = [(n, w) for n, w in enumerate(writes) if getattr(w, "later", None) is not None]
    if not later:
        return None
    found: dict[Any, Record] = {}
    scopes: dict[tuple, list[Any]] = {}
    for _, w in later:
        scope = (id(w.actor.user), w.later.record_type.name)
        scopes.setdefault(scope, [w.actor, w.later.record_type]).append(w.record.pk)
    for actor, rt, *pks in scopes.values():
        found.update((r.pk, r) for r in writable_rows(actor, rt).filter(pk__in=pks))
    for n, w in later:
        record = found.get(w.record.pk)
        if record is None or record.external_id != w.record.external_id:
            return n
        _completed(w, record)
    return None


def _completed(write: Any, record: Record) -> None:
    """``write`` made whole from its record as read: the version its statement guards, and the
    fields an update stores (``parent`` merged in, as ``before_save_on_update`` merges it) or
    the snapshot a delete's ``after_delete`` hooks see."""
    write.version = record.sync_version
    parent = write.later.parent
    if parent is None:
        write.snapshot = record_snapshot(record)
    else:
        write.before = record.fields
        record.fields = {**record.fields, **parent}
        record.sync_version, record.updated_at = record.sync_version + 1, timezone.now()
    write.record, write.later = record, None


def first_taken(writes: list[Any], creates: tuple[type, ...]) -> int:
    """The first create of ``writes`` whose key a committed record holds (0 if none does now:
    the writer that held it rolled back, and the first is made again alone)."""
    keys = {n: w.record.idempotency_key for n, w in _of(writes, creates)}
    taken = set(
        Record.reads.filter(idempotency_key__in=keys.values()).values_list(
            "idempotency_key", flat=True
        )
    )
    return next((n for n, key in keys.items() if key in taken), 0)


def first_moved(writes: list[Any], changes: tuple[type, ...]) -> int:
    """The first update or delete of ``writes`` whose record is no longer at the version it was
    read at (or, hiding a connected record, in the sync state), or gone (the first of them if
    none is now)."""
    updates = {n: w for n, w in _of(writes, changes) if not getattr(w, "folded", False)}
    read = Record.reads.filter(pk__in=[w.record.pk for w in updates.values()])
    now = {pk: (v, state) for pk, v, state in read.values_list("pk", "sync_version", "sync_state")}
    return next((n for n, w in updates.items() if _moved(w, now)), min(updates, default=0))


def _moved(write: Any, now: dict) -> bool:
    """Whether ``write``'s record is gone, at another version, or (a connected record being
    hidden) in another sync state than it was read in."""
    version, state = now.get(write.record.pk, (None, None))
    hidden_from = getattr(write, "hidden_from", None)
    return version != write.version or hidden_from not in (None, state)


def _of(writes: list[Any], kinds: tuple[type, ...]) -> list[tuple[int, Any]]:
    """The writes of ``kinds``, by their position in ``writes``."""
    return [(n, w) for n, w in enumerate(writes) if isinstance(w, kinds)]
