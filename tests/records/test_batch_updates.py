"""A migration batch's updates (``records.batch_writes``): a fixed number of statements whatever
the batch's size, only records the actor may write, fields merged, versions moved, outbound
writes and trail rows in row order."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from records.batch_writes import BatchWrite, UpdateItem, rows_write
from records.boundary import record_create
from records.models import Record, RecordWriteState, WriteTrail
from records.trail import Actor

pytestmark = pytest.mark.django_db


def _made(user, record_type: str, count: int) -> list[Record]:
    actor = Actor(user=user)
    return [
        record_create(
            actor=actor,
            record_type=record_type,
            parent=_parent(record_type, n),
        ).record
        for n in range(count)
    ]


def _parent(record_type: str, n: int) -> dict:
    if record_type == "customer":  # ``custom`` takes any JSON value
        return {"company_name": f"Company {n}", "custom": {"n": [n, None, "é"]}}
    return {"legacy_id": f"L{n:03d}", "company_name": f"Company {n}"}


def _stamps(user, record_type: str, records: list[Record], **changes) -> list:
    actor = Actor(user=user, process_step="stamp")
    field = "memo" if record_type == "customer" else "status"
    return [
        [BatchWrite(actor, record_type, UpdateItem({field: "sent", **changes}, r.pk))]
        for r in records
    ]


def _written(rows: list) -> list:
    with transaction.atomic():
        return rows_write(rows=rows)


@pytest.mark.parametrize("record_type", ["migration_item", "customer"])
def test_a_batch_of_stamps_costs_the_same_statements_whatever_its_size(alice, record_type):
    """K updates (of an app-owned type, and of a connected one with its outbound writes) cost
    one locking read, one UPDATE and one INSERT per table, whatever K."""
    records = _made(alice, record_type, 40)
    counted = []
    for chosen in (records[:3], records[3:40]):
        with CaptureQueriesContext(connection) as queries:
            written = _written(_stamps(alice, record_type, chosen))
        assert len(written) == len(chosen)
        counted.append(len(queries.captured_queries))
    # The savepoint and its release, the locking read, the UPDATE (elsewhere than
    # PostgreSQL a read of the fields before it), the trail rows (a connected type's outbound writes).
    expected = 5 + (record_type == "customer") + (connection.vendor != "postgresql")
    assert counted == [expected, expected]


def test_stamps_merge_their_fields_move_the_version_and_trail_in_row_order(alice):
    records = _made(alice, "customer", 3)
    before = {r.pk: r.updated_at for r in records}
    written = _written(_stamps(alice, "customer", records, custom={"q": "x'\"\\"}))
    assert [(w[0].pg_row_id, w[0].is_new, w[0].record_type) for w in written] == [
        (r.pk, False, "customer") for r in records
    ]
    for n, record in enumerate(records):
        stored = Record.reads.get(pk=record.pk)
        assert stored.fields == {
            "company_name": f"Company {n}",
            "custom": {"q": "x'\"\\"},
            "memo": "sent",
        }
        assert stored.sync_version == record.sync_version + 1
        assert stored.updated_at > before[record.pk]
    states = RecordWriteState.objects.filter(operation="update").order_by("pk")
    assert [(s.record_id, s.payload) for s in states] == [
        (r.pk, {"parent": {"memo": "sent", "custom": {"q": "x'\"\\"}}}) for r in records
    ]
    trail = WriteTrail.reads.filter(action="update").order_by("pk")
    assert [(t.pg_row_id, t.process_step, t.outcome) for t in trail] == [
        (r.pk, "stamp", "allowed") for r in records
    ]


def test_a_stamp_of_a_record_the_actor_may_not_write_ends_the_batch_before_it(alice, bob):
    """``migration_item`` is written by its owner only: bob's batch stops at alice's record, and
    nothing of that row or after it is written."""
    mine, theirs = _made(bob, "migration_item", 2), _made(alice, "migration_item", 1)
    written = _written(_stamps(bob, "migration_item", [mine[0], theirs[0], mine[1]]))
    assert [w[0].pg_row_id for w in written] == [mine[0].pk]
    statuses = {
        r.pk: (r.fields.get("status"), r.sync_version)
        for r in Record.reads.filter(record_type="migration_item")
    }
    assert statuses == {
        mine[0].pk: ("sent", 2),
        theirs[0].pk: (None, 1),
        mine[1].pk: (None, 1),
    }


def test_a_watched_types_stamps_tell_its_watchers_in_row_order_with_the_record(admin_user, alice):
    """``salesOrder`` is watched (a record trigger): its records are read whole, and each update
    entering the state starts one run with the record as written, in row order."""
    from processes.models import ProcessRun
    from tests.processes.engine_support import deploy
    from tests.processes.test_triggers_record import ON_APPROVED

    deploy(ON_APPROVED, by=admin_user, name="processes/on-approved.ts")
    actor = Actor(user=alice)
    orders = [
        record_create(
            actor=actor, record_type="salesOrder", parent={"memo": f"m{n}", "status": "draft"}
        ).record
        for n in range(3)
    ]
    stamp = Actor(user=alice, process_step="stamp")
    changes = [{"status": "approved"}, {"memo": "kept"}, {"status": "approved"}]
    written = _written(
        [
            [BatchWrite(stamp, "salesOrder", UpdateItem(change, order.pk))]
            for order, change in zip(orders, changes, strict=True)
        ]
    )
    assert len(written) == 3
    runs = ProcessRun.objects.filter(process_id="acme:on-approved").order_by("created_at")
    assert [(run.input["pgRowId"], run.input["record"]) for run in runs] == [
        (str(orders[0].pk), {"memo": "m0", "status": "approved"}),
        (str(orders[2].pk), {"memo": "m2", "status": "approved"}),
    ]
    assert Record.reads.get(pk=orders[1].pk).fields == {"memo": "kept", "status": "draft"}
