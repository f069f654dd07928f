"""The records door refuses every ORM write path from outside, and reads cannot write at all."""

from __future__ import annotations

import pytest

from records.boundary import record_create
from records.door import DoorClosed, door_open
from records.models import Record, RecordWriteState, SyncState, TrailOutcome, WriteTrail

pytestmark = pytest.mark.django_db


@pytest.fixture
def memo(alice_actor) -> Record:
    """An app-owned record made through the boundary, as every record is."""
    result = record_create(
        actor=alice_actor,
        record_type="legacy_customer",
        parent={"company_name": "Kept", "legacy_id": "L-1"},
    )
    return Record.reads.get(pk=result.record.pk)


def _snapshot() -> list[tuple]:
    return list(
        Record.reads.order_by("pk").values_list("pk", "fields", "sync_state", "sync_version")
    )


WRITES = {
    "create": lambda m: Record.objects.create(
        record_type="legacy_customer", fields={}, sync_state=SyncState.LOCAL
    ),
    "save (new)": lambda m: Record(
        record_type="legacy_customer", fields={}, sync_state=SyncState.LOCAL
    ).save(),
    "save (existing)": lambda m: (setattr(m, "fields", {"company_name": "Changed"}), m.save()),
    "update": lambda m: Record.objects.filter(pk=m.pk).update(fields={"company_name": "Changed"}),
    "queryset delete": lambda m: Record.objects.filter(pk=m.pk).delete(),
    "instance delete": lambda m: m.delete(),
    "bulk_create": lambda m: Record.objects.bulk_create(
        [Record(record_type="legacy_customer", fields={}, sync_state=SyncState.LOCAL)]
    ),
    "bulk_update": lambda m: Record.objects.bulk_update(
        [
            Record(
                pk=m.pk,
                record_type="legacy_customer",
                fields={"company_name": "Changed"},
                sync_state=m.sync_state,
            )
        ],
        ["fields"],
    ),
    "get_or_create": lambda m: Record.objects.get_or_create(
        idempotency_key="new-key",
        defaults={"record_type": "legacy_customer", "sync_state": SyncState.LOCAL},
    ),
    "update_or_create": lambda m: Record.objects.update_or_create(
        pk=m.pk, defaults={"fields": {"company_name": "Changed"}}
    ),
}


@pytest.mark.parametrize("path", list(WRITES))
def test_every_write_path_is_refused_outside_the_door(memo: Record, path: str) -> None:
    before = _snapshot()
    with pytest.raises(DoorClosed, match="outside the records door"):
        WRITES[path](memo)
    assert _snapshot() == before


@pytest.mark.parametrize(
    "path", ["create", "update", "queryset delete", "bulk_create", "get_or_create"]
)
def test_the_read_manager_cannot_write_even_inside_the_door(memo: Record, path: str) -> None:
    reads = {
        "create": lambda: Record.reads.create(
            record_type="legacy_customer", sync_state=SyncState.LOCAL
        ),
        "update": lambda: Record.reads.filter(pk=memo.pk).update(fields={}),
        "queryset delete": lambda: Record.reads.filter(pk=memo.pk).delete(),
        "bulk_create": lambda: Record.reads.bulk_create(
            [Record(record_type="legacy_customer", sync_state="local")]
        ),
        "get_or_create": lambda: Record.reads.get_or_create(
            idempotency_key="k", record_type="legacy_customer"
        ),
    }
    before = _snapshot()
    with door_open(), pytest.raises(DoorClosed, match="read-only manager"):
        reads[path]()
    assert _snapshot() == before


def test_write_state_and_trail_are_behind_the_door_too(memo: Record) -> None:
    trail = WriteTrail.reads.filter(pg_row_id=memo.pk).get()
    assert trail.outcome == TrailOutcome.ALLOWED
    with pytest.raises(DoorClosed):
        WriteTrail.objects.filter(pk=trail.pk).update(message="forged")
    with pytest.raises(DoorClosed):
        trail.delete()
    with pytest.raises(DoorClosed):
        RecordWriteState.objects.create(
            record=memo,
            record_type="legacy_customer",
            source_system="x",
            operation="create",
            status="pending",
        )
    assert WriteTrail.reads.get(pk=trail.pk).message == trail.message
    assert RecordWriteState.reads.count() == 0


def test_the_door_writes_and_closes_behind_itself(memo: Record) -> None:
    with door_open():
        Record.objects.filter(pk=memo.pk).update(fields={"company_name": "Inside"})
    assert Record.reads.get(pk=memo.pk).fields == {"company_name": "Inside"}
    with pytest.raises(DoorClosed):
        Record.objects.filter(pk=memo.pk).update(fields={"company_name": "After"})
