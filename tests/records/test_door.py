"""The records door refuses every ORM write path from outside, and reads cannot write at all.

Each write path is tried on each of the three guarded models (``Record``, ``RecordWriteState``,
``WriteTrail``), its async twin included: the refusal comes before any SQL, and every row stays as
it was.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import models

from records.boundary import record_create
from records.door import DoorClosed, door_open
from records.models import (
    Record,
    RecordWriteState,
    SyncState,
    TrailAction,
    TrailOutcome,
    WriteOperation,
    WriteStatus,
    WriteTrail,
)

pytestmark = pytest.mark.django_db

GUARDED: tuple[type[models.Model], ...] = (Record, RecordWriteState, WriteTrail)
# The column each test changes on a kept row, and the value it tries to write.
CHANGE: dict[type[models.Model], tuple[str, Any]] = {
    Record: ("fields", {"company_name": "Changed"}),
    RecordWriteState: ("message", "forged"),
    WriteTrail: ("message", "forged"),
}


@pytest.fixture
def kept(alice_actor) -> dict[type[models.Model], models.Model]:
    """One kept row of each guarded model: an app-owned record and its trail row, made through the
    boundary as every record is, and a write state of that record built inside the door (showing
    the door shut needs no connected source)."""
    result = record_create(
        actor=alice_actor,
        record_type="legacy_customer",
        parent={"company_name": "Kept", "legacy_id": "L-1"},
    )
    record = Record.reads.get(pk=result.record.pk)
    with door_open():
        state = RecordWriteState.objects.create(
            record=record,
            record_type="legacy_customer",
            source_system="x",
            operation=WriteOperation.CREATE,
            status=WriteStatus.PENDING,
        )
    return {
        Record: record,
        RecordWriteState: RecordWriteState.reads.get(pk=state.pk),
        WriteTrail: WriteTrail.reads.get(pg_row_id=record.pk),
    }


def _new(model: type[models.Model], kept: dict[type[models.Model], models.Model]) -> dict[str, Any]:
    """The columns of a new, valid row of ``model`` (never saved)."""
    if model is Record:
        return {"record_type": "legacy_customer", "fields": {}, "sync_state": SyncState.LOCAL}
    if model is RecordWriteState:
        return {
            "record": kept[Record],
            "record_type": "legacy_customer",
            "source_system": "x",
            "operation": WriteOperation.UPDATE,
            "status": WriteStatus.PENDING,
        }
    return {
        "action": TrailAction.CREATE,
        "record_type": "legacy_customer",
        "outcome": TrailOutcome.ALLOWED,
    }


def _missing_pk(model: type[models.Model]) -> Any:
    return uuid.uuid4() if model is Record else 10**12


def _snapshot() -> dict[str, list[dict[str, Any]]]:
    return {m.__name__: list(m.reads.order_by("pk").values()) for m in GUARDED}


Write = Callable[[type[models.Model], dict[type[models.Model], models.Model]], Any]


def _changed(model: type[models.Model], row: models.Model) -> models.Model:
    name, value = CHANGE[model]
    setattr(row, name, value)
    return row


WRITES: dict[str, Write] = {
    "create": lambda m, k: m.objects.create(**_new(m, k)),
    "save (new)": lambda m, k: m(**_new(m, k)).save(),
    "save (existing)": lambda m, k: _changed(m, k[m]).save(),
    "update": lambda m, k: m.objects.filter(pk=k[m].pk).update(**dict([CHANGE[m]])),
    "queryset delete": lambda m, k: m.objects.filter(pk=k[m].pk).delete(),
    "instance delete": lambda m, k: k[m].delete(),
    "bulk_create": lambda m, k: m.objects.bulk_create([m(**_new(m, k))]),
    "bulk_update": lambda m, k: m.objects.bulk_update([_changed(m, k[m])], [CHANGE[m][0]]),
    "get_or_create": lambda m, k: m.objects.get_or_create(pk=_missing_pk(m), defaults=_new(m, k)),
    "update_or_create": lambda m, k: m.objects.update_or_create(
        pk=k[m].pk, defaults=dict([CHANGE[m]])
    ),
    # The async twins call the sync paths above (the door's context variable follows them).
    "acreate": lambda m, k: async_to_sync(m.objects.all().acreate)(**_new(m, k)),
    "asave": lambda m, k: async_to_sync(_changed(m, k[m]).asave)(),
    "aupdate": lambda m, k: async_to_sync(m.objects.filter(pk=k[m].pk).aupdate)(
        **dict([CHANGE[m]])
    ),
    "adelete (queryset)": lambda m, k: async_to_sync(m.objects.filter(pk=k[m].pk).adelete)(),
    "adelete (instance)": lambda m, k: async_to_sync(k[m].adelete)(),
    "abulk_create": lambda m, k: async_to_sync(m.objects.all().abulk_create)([m(**_new(m, k))]),
    "aupdate_or_create": lambda m, k: async_to_sync(m.objects.all().aupdate_or_create)(
        pk=k[m].pk, defaults=dict([CHANGE[m]])
    ),
}


@pytest.mark.parametrize("model", GUARDED, ids=lambda m: m.__name__)
@pytest.mark.parametrize("path", list(WRITES))
def test_every_write_path_is_refused_outside_the_door(kept, model, path: str) -> None:
    before = _snapshot()
    with pytest.raises(DoorClosed, match="outside the records door"):
        WRITES[path](model, kept)
    assert _snapshot() == before


@pytest.mark.parametrize("model", GUARDED, ids=lambda m: m.__name__)
@pytest.mark.parametrize(
    "path",
    [
        "create",
        "update",
        "queryset delete",
        "bulk_create",
        "bulk_update",
        "get_or_create",
        "update_or_create",
    ],
)
def test_the_read_manager_cannot_write_even_inside_the_door(kept, model, path: str) -> None:
    reads = {
        "create": lambda: model.reads.create(**_new(model, kept)),
        "update": lambda: model.reads.filter(pk=kept[model].pk).update(**dict([CHANGE[model]])),
        "queryset delete": lambda: model.reads.filter(pk=kept[model].pk).delete(),
        "bulk_create": lambda: model.reads.bulk_create([model(**_new(model, kept))]),
        "bulk_update": lambda: model.reads.bulk_update(
            [_changed(model, kept[model])], [CHANGE[model][0]]
        ),
        "get_or_create": lambda: model.reads.get_or_create(
            pk=_missing_pk(model), defaults=_new(model, kept)
        ),
        "update_or_create": lambda: model.reads.update_or_create(
            pk=kept[model].pk, defaults=dict([CHANGE[model]])
        ),
    }
    before = _snapshot()
    with door_open(), pytest.raises(DoorClosed, match="read-only manager"):
        reads[path]()
    assert _snapshot() == before


def test_a_records_related_manager_is_the_guarded_one(kept) -> None:
    """``record.write_states`` is built from the default manager, so it refuses too."""
    record = kept[Record]
    before = _snapshot()
    with pytest.raises(DoorClosed, match="outside the records door"):
        record.write_states.create(
            record_type="legacy_customer",
            source_system="x",
            operation=WriteOperation.UPDATE,
            status=WriteStatus.PENDING,
        )
    with pytest.raises(DoorClosed, match="outside the records door"):
        record.write_states.update(message="forged")
    assert _snapshot() == before


def test_the_door_writes_and_closes_behind_itself(kept) -> None:
    record = kept[Record]
    with door_open():
        Record.objects.filter(pk=record.pk).update(fields={"company_name": "Inside"})
    assert Record.reads.get(pk=record.pk).fields == {"company_name": "Inside"}
    with pytest.raises(DoorClosed):
        Record.objects.filter(pk=record.pk).update(fields={"company_name": "After"})
