"""A one-create-step migration writes its rows in batches: each batch's records, trail rows and
ledger rows commit together or not at all; a row the batch cannot take runs alone, as before."""

from __future__ import annotations

import pytest
from django.db import connection

from guardrails.settings import setting_set
from processes.engine.runner import run_deliver
from processes.models import ProcessRun
from records.boundary import record_create
from records.errors import HookRejection
from records.hooks import hook_register
from records.models import Record, RecordWriteState, WriteTrail
from records.trail import Actor
from tests.processes.engine_support import deploy, invoke, pump
from tests.processes.test_engine__migration import _items

pytestmark = pytest.mark.django_db
PROCESS = "t:batched"
SOURCE = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:batched',
  input: { type: 'object' },
  eachRow: {
    outstanding: () => 'migration_item?select=legacy_id,company_name&order=legacy_id',
    key: 'legacy_id',
  },
  steps: [
    { id: 'create', recordType: 'customer',
      build: (ctx) => ({ parent: { company_name: ctx.row!.company_name } }) },
  ],
});
"""


@pytest.fixture
def batched(admin_user):
    deploy(SOURCE, by=admin_user)
    setting_set("processes.slice_batch_rows", 4)
    setting_set("processes.slice_max_rows", 100)  # one slice: the rows are never marked done
    return PROCESS


def _customers() -> int:
    return Record.reads.filter(record_type="customer").count()


def test_every_row_is_written_once_with_its_trail_write_state_and_ledger_row(batched, alice):
    _items(alice, 10)
    run = invoke(batched, {}, alice)
    pump(sources=False)
    run.refresh_from_db()
    assert (run.state, run.outstanding, run.slices, run.writes) == ("committed", 0, 1, 10)
    creates = run.ledger.filter(step_id="create")
    assert creates.filter(disposition="confirmed", created_record=True).count() == 10
    assert creates.values("row_key").distinct().count() == 10
    assert len(set(creates.values_list("sequence", flat=True))) == 10
    records = Record.reads.filter(record_type="customer")
    assert set(records.values_list("pk", flat=True)) == set(
        creates.values_list("pg_row_id", flat=True)
    )
    assert set(records.values_list("idempotency_key", flat=True)) == {
        f"row:{PROCESS}:L{n:05d}:create" for n in range(10)
    }
    trail = WriteTrail.reads.filter(record_type="customer", process_run_id=str(run.run_id))
    assert list(trail.values_list("outcome", "process_step").distinct()) == [("allowed", "create")]
    assert trail.count() == 10
    # A connected type: every record has its pending outbound write.
    assert RecordWriteState.reads.filter(record_type="customer", status="pending").count() == 10


def test_a_row_refused_inside_a_batch_fails_the_run_as_one_row_does(batched, alice):
    def refuse(ctx):
        if ctx.record["parent"].get("company_name") == "Company 5":
            raise HookRejection("company 5 is blocked", code="BLOCKED", field="parent.company_name")

    unregister = hook_register(slot="before_save", record_type="customer", hook=refuse)
    try:
        _items(alice, 10)
        run = invoke(batched, {}, alice)
        pump(sources=False)
    finally:
        unregister()
    run.refresh_from_db()
    assert (run.state, run.outstanding, run.writes) == ("failed", 4, 5)
    assert "L00005" in run.reason and "BLOCKED" in run.reason
    failed = run.ledger.get(step_id="create", row_key="L00005")
    assert (failed.disposition, failed.refusal_code) == ("failed", "BLOCKED")
    assert _customers() == 5  # the rows before it, in one full batch and one cut short
    assert not run.ledger.filter(row_key__in=["L00006", "L00007"]).exists()
    refused = WriteTrail.reads.get(record_type="customer", outcome="refused")
    assert (refused.code, refused.process_run_id) == ("BLOCKED", str(run.run_id))


def test_rows_whose_key_was_used_are_handed_on_between_batches(batched, alice, admin_user):
    _items(alice, 9)
    actor = Actor(user=alice)
    earlier = {
        n: record_create(
            actor=actor,
            record_type="customer",
            parent={"company_name": f"earlier {n}"},
            idempotency_key=f"row:{PROCESS}:L{n:05d}:create",
        ).record
        for n in (2, 3, 7)
    }
    run = invoke(batched, {}, alice)
    pump(sources=False)
    run.refresh_from_db()
    assert (run.state, run.outstanding, run.writes) == ("committed", 0, 6)
    assert _customers() == 9
    for n, record in earlier.items():
        row = run.ledger.get(row_key=f"L{n:05d}")
        assert (row.disposition, row.skip_reason, row.pg_row_id) == ("skipped", "reused", record.pk)
    assert run.ledger.filter(disposition="confirmed").count() == 6


class Crash(BaseException):
    """A worker dying mid-batch: nothing in the engine catches it."""


def test_a_delivery_dying_mid_batch_loses_that_batch_whole_and_the_next_resumes(batched, alice):
    _items(alice, 10)
    crashed = []

    def die_once(ctx):
        if ctx.record["parent"].get("company_name") == "Company 6" and not crashed:
            crashed.append(True)
            raise Crash

    unregister = hook_register(slot="before_save", record_type="customer", hook=die_once)
    try:
        run = invoke(batched, {}, alice)
        with pytest.raises(Crash):
            run_deliver(str(run.pk))
    finally:
        unregister()
    # A slice's batches double from one row (at most 4 here): rows 0, 1-2 and 3-6. The first two
    # committed; the third was in hand when row 6's hook died: none of it is written.
    assert _customers() == 3
    assert run.ledger.count() == 3
    ProcessRun.objects.filter(pk=run.pk).update(lease_owner="", lease_until=None)
    pump(sources=False)
    run.refresh_from_db()
    assert (run.state, run.outstanding, run.slices, run.writes) == ("committed", 0, 1, 10)
    assert _customers() == 10
    creates = run.ledger.filter(step_id="create", disposition="confirmed")
    assert creates.count() == 10 and creates.values("row_key").distinct().count() == 10


def test_one_row_a_batch_is_the_row_by_row_path(batched, alice):
    setting_set("processes.slice_batch_rows", 1)
    _items(alice, 3)
    run = invoke(batched, {}, alice)
    pump(sources=False)
    run.refresh_from_db()
    assert (run.state, run.writes, _customers()) == ("committed", 3, 3)


def test_the_batch_insert_is_refused_outside_the_records_door(alice):
    from kernel.bulk import rows_insert
    from records.door import DoorClosed

    with pytest.raises(DoorClosed):
        rows_insert(
            WriteTrail, WriteTrail(action="create", record_type="customer"), {"pg_row_id": []}
        )
    assert not WriteTrail.reads.exists()


def test_the_batch_insert_stores_each_rows_values_as_the_orm_does(batched, alice):
    """JSON (nested, with nulls and unicode), times to the microsecond, NULLs, one row each."""
    import datetime

    from django.utils import timezone

    from kernel.bulk import rows_insert
    from processes.models import ProcessRunSlice

    run = invoke(batched, {}, alice)
    at = timezone.now().replace(microsecond=123456)
    values = [[{"a": {"b": [1, None, "é\u2028"]}}], [], [{"q": "x'\"\\"}]]
    rows_insert(
        ProcessRunSlice,
        ProcessRunSlice(run=run, total_read=7),
        {
            "number": [11, 12, 13],
            "rows": values,
            "finished_at": [at, None, at + datetime.timedelta(microseconds=1)],
        },
    )
    stored = ProcessRunSlice.objects.filter(run=run, number__gt=10).order_by("number")
    assert [(s.number, s.rows, s.finished_at, s.total_read) for s in stored] == [
        (11, values[0], at, 7),
        (12, [], None, 7),
        (13, values[2], at + datetime.timedelta(microseconds=1), 7),
    ]


# -- the seed's create-then-stamp shape (a create and an update by pgRowId a row) -------------


@pytest.fixture
def stamped(admin_user):
    from tests.processes.test_engine__migration import FIXTURES, TRACKED

    deploy((FIXTURES / "migrate-customers-tracked.ts").read_text(), by=admin_user)
    setting_set("processes.slice_max_rows", 100)
    return TRACKED


def _migrated(run: ProcessRun, batch: str) -> dict:
    """What a run wrote, with its rows named by their position (L… of this batch's numbering)."""
    items = {
        r.pk: r for r in Record.reads.filter(record_type="migration_item", fields__batch=batch)
    }
    base = min(int(i.fields["legacy_id"][1:]) for i in items.values())

    def position(row_key: str) -> int:
        return int(row_key[1:]) - base

    ledger = [
        (position(r.row_key), r.step_id, r.action, r.disposition, r.created_record, r.counts_write)
        for r in run.ledger.order_by("sequence")
    ]
    names = {
        str(pk): fields["company_name"]
        for pk, fields in Record.reads.filter(record_type="customer").values_list("pk", "fields")
    }
    # Each row stamped with the customer created from it.
    marked = sorted(
        (position(i.fields["legacy_id"]), i.fields["status"], i.sync_version)
        for i in items.values()
        if names.get(i.fields.get("target_pg_row_id")) == i.fields["company_name"]
    )
    trail = list(
        WriteTrail.reads.filter(process_run_id=str(run.run_id))
        .order_by("id")
        .values_list("action", "record_type", "process_step", "outcome")
    )
    states = list(
        RecordWriteState.reads.filter(record__pk__in=[r.pg_row_id for r in run.ledger.all()])
        .order_by("id")
        .values_list("record_type", "operation", "status")
    )
    # The records it created, column by column (``fields`` by name: values carry the batch).
    created = sorted(
        (r.owner_id, r.group_id, r.source_system, r.sync_state, r.sync_version, r.external_id)
        + (
            r.lines,
            sorted(r.fields),
            r.idempotency_key.rsplit(":", 1)[-1],
            r.created_at is not None,
        )
        for r in Record.reads.filter(
            pk__in=[s.pg_row_id for s in run.ledger.filter(created_record=True)]
        )
    )
    return {
        "ledger": ledger,
        "marked": marked,
        "trail": trail,
        "states": states,
        "created": created,
    }


def test_create_and_stamp_rows_batch_and_write_what_row_by_row_writes(stamped, alice):
    """The same migration, batched and row by row, writes the same records, trail, outbound
    writes and ledger (in the same order) — in a fraction of the statements."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _items(alice, 30, batch="one")
    _items(alice, 30, batch="two", start=100)
    setting_set("processes.slice_batch_rows", 1)
    alone = invoke(stamped, {"batch": "one"}, alice)
    with CaptureQueriesContext(connection) as row_by_row:
        pump(sources=False)
    setting_set("processes.slice_batch_rows", 1000)
    batched = invoke(stamped, {"batch": "two"}, alice)
    with CaptureQueriesContext(connection) as in_batches:
        pump(sources=False)
    for run in (alone, batched):
        run.refresh_from_db()
        assert (run.state, run.outstanding, run.writes) == ("committed", 0, 60)
    expected, got = _migrated(alone, "one"), _migrated(batched, "two")
    assert got == expected
    assert len(got["created"]) == 30 and got["created"][0][0] == alice.pk
    assert len(got["marked"]) == 30 and {m[1:] for m in got["marked"]} == {("sent", 2)}
    assert [entry[:2] for entry in got["ledger"][:4]] == [
        (0, "create"),
        (0, "mark"),
        (1, "create"),
        (1, "mark"),
    ]
    assert len(in_batches.captured_queries) * 4 < len(row_by_row.captured_queries)


def test_a_stamp_refused_inside_a_batch_fails_the_run_at_that_row(stamped, alice):
    def refuse(ctx):
        if ctx.record["parent"].get("company_name") == "Company 5":
            raise HookRejection("item 5 is frozen", code="FROZEN", field="parent.status")

    setting_set("processes.slice_batch_rows", 1000)
    _items(alice, 10)
    unregister = hook_register(slot="before_save", record_type="migration_item", hook=refuse)
    try:
        run = invoke(stamped, {"batch": "2026-10"}, alice)
        pump(sources=False)
    finally:
        unregister()
    run.refresh_from_db()
    assert (run.state, run.outstanding) == ("failed", 4)
    # Rows 0-4 whole; row 5's create landed alone, its stamp was refused.
    assert run.writes == 11
    failed = run.ledger.get(step_id="mark", row_key="L00005")
    assert (failed.disposition, failed.refusal_code) == ("failed", "FROZEN")
    assert _customers() == 6
    assert not run.ledger.filter(row_key__in=["L00006", "L00007"]).exists()
    statuses = dict(
        Record.reads.filter(record_type="migration_item").values_list(
            "fields__legacy_id", "fields__status"
        )
    )
    assert [statuses[f"L{n:05d}"] for n in range(10)] == ["sent"] * 5 + ["pending"] * 5
    refused = WriteTrail.reads.get(record_type="migration_item", outcome="refused")
    assert (refused.code, refused.process_step) == ("FROZEN", "mark")


def test_a_stamp_of_a_record_gone_stops_the_batch_and_fails_as_one_row_does(stamped, alice):
    from records.boundary import record_delete

    setting_set("processes.slice_batch_rows", 1000)
    items = _items(alice, 6)
    run = invoke(stamped, {"batch": "2026-10"}, alice)
    # The outstanding read has listed every row; row 3's record is gone before it is stamped.
    from processes.engine import migration

    opened = migration.MigrationSlice._open

    def open_then_delete(self):
        current = opened(self)
        record_delete(actor=Actor(user=alice), record_type="migration_item", pg_row_id=items[3].pk)
        return current

    migration.MigrationSlice._open = open_then_delete
    try:
        pump(sources=False)
    finally:
        migration.MigrationSlice._open = opened
    run.refresh_from_db()
    assert run.state == "failed"
    failed = run.ledger.get(step_id="mark", row_key="L00003")
    assert (failed.disposition, failed.refusal_code) == ("failed", "RECORD_NOT_FOUND")
    assert run.ledger.filter(step_id="mark", disposition="confirmed").count() == 3


def test_the_batch_update_stores_each_rows_values_as_the_orm_does(batched, alice):
    """``rows_update``: JSON (nested, nulls, unicode, quotes), times to the microsecond and NULLs
    land row by row as ``save`` would store them; rows not named are untouched."""
    import datetime

    from django.utils import timezone

    from kernel.bulk import rows_update
    from processes.models import ProcessRunSlice

    run = invoke(batched, {}, alice)
    at = timezone.now().replace(microsecond=654321)
    slices = [ProcessRunSlice.objects.create(run=run, number=n, total_read=1) for n in (21, 22, 23)]
    values = [[{"a": {"b": [1, None, "é\u2028"]}}], [], [{"q": "x'\"\\"}]]
    for piece, rows, finished in zip(
        slices[:2], values, [at, at + datetime.timedelta(microseconds=1)], strict=False
    ):
        piece.rows, piece.finished_at = rows, finished
    rows_update(ProcessRunSlice, slices[:2], ["rows", "finished_at"])
    stored = ProcessRunSlice.objects.filter(run=run, number__gt=20).order_by("number")
    assert [(s.number, s.rows, s.finished_at) for s in stored] == [
        (21, values[0], at),
        (22, [], at + datetime.timedelta(microseconds=1)),
        (23, [], None),
    ]


def test_the_batch_update_is_refused_outside_the_records_door(alice):
    from kernel.bulk import rows_update
    from records.door import DoorClosed

    record = record_create(
        actor=Actor(user=alice), record_type="migration_item", parent={"legacy_id": "L1"}
    ).record
    record.fields = {"legacy_id": "changed"}
    with pytest.raises(DoorClosed):
        rows_update(Record, [record], ["fields"])
    assert Record.reads.get(pk=record.pk).fields == {"legacy_id": "L1"}


def _transactions_by_slice(run: ProcessRun) -> dict[int, int]:
    """How many transactions wrote each slice's ledger rows (PostgreSQL's ``xmin``)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT visit, count(DISTINCT xmin::text) FROM process_run_step"
            " WHERE run_id = %s GROUP BY visit ORDER BY visit",
            [run.pk],
        )
        return dict(cursor.fetchall())


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="counts PostgreSQL transactions")
def test_a_later_slice_starts_at_the_previous_slices_pace_not_one_row(stamped, alice):
    """The first slice's batches grow 1, 2, 4 … rows; the next slices know a row's time in the
    slice before and take their rows in two batches (a third, then the rest built ahead)."""
    setting_set("processes.slice_max_rows", 10)
    setting_set("processes.slice_batch_rows", 1000)
    _items(alice, 30)
    run = invoke(stamped, {"batch": "2026-10"}, alice)
    pump(sources=False)
    run.refresh_from_db()
    assert (run.state, run.outstanding, run.slices, run.writes) == ("committed", 0, 3, 60)
    assert _transactions_by_slice(run) == {1: 4, 2: 2, 3: 2}  # 1 + 2 + 4 + 3 rows; 4 + 6; 4 + 6


def test_a_slice_s_first_batch_fits_its_wall_clock_at_the_previous_pace():
    from types import SimpleNamespace

    from processes.engine.migration_batch import SliceBatches

    runner = SimpleNamespace(run=None, ceilings=SimpleNamespace(slice_max_ms=1_000))
    batches = SliceBatches(runner, [], "id")  # type: ignore[arg-type]
    assert batches.rows_fitting(0, 0) == 1  # no pace known: one row first
    assert batches.rows_fitting(0, 0, pace_ms=4.0) == 250
    assert batches.rows_fitting(600, 0, pace_ms=4.0) == 100
    assert batches.rows_fitting(500, 100, pace_ms=4.0) == 100  # its own pace, once it has one


def test_a_batch_takes_its_functions_values_computed_while_the_batch_before_wrote(
    stamped, alice, monkeypatch
):
    """Each batch after a slice's first takes its functions' values from the request sent ahead
    while the batch before it wrote (one request for its three calls); a later slice's first
    batch is a third of its rows, the second the rest. What is written is what row by row
    writes: each row's stamp names the customer created from it (its id chosen when the request
    went ahead)."""
    import json

    from extensions.child_process import ChildProcess

    requests: list[tuple[str, object]] = []
    send_encoded = ChildProcess.send_encoded

    def recording(self: ChildProcess, encoded: str) -> None:
        for line in encoded.splitlines():  # calls sent ahead together are one line each
            message = json.loads(line)
            if message.get("op") == "call_each":
                requests.append(("call_each", len(message["ctxs"])))
            elif message.get("op") == "call_each_many":
                requests.append(("call_each_many", [len(c["ctxs"]) for c in message["calls"]]))
        send_encoded(self, encoded)

    monkeypatch.setattr(ChildProcess, "send_encoded", recording)
    setting_set("processes.slice_batch_rows", 1000)
    _items(alice, 160, batch="ahead")
    run = invoke(stamped, {"batch": "ahead"}, alice)
    pump(sources=False)

    run.refresh_from_db()
    assert (run.state, run.outstanding, run.slices) == ("committed", 0, 2)
    assert run.writes == 2 * 160
    got = _migrated(run, "ahead")
    assert len(got["marked"]) == 160
    assert {m[1:] for m in got["marked"]} == {("sent", 2)}
    # The first slice: 1 row, then 2 (no pace known before the first row: nothing goes ahead),
    # then 4, … 32 and the 37 left, each sent ahead; the second slice (60 rows): 20, then the 40
    # left, sent ahead.
    assert requests == [
        *[("call_each", 1)] * 3,
        *[("call_each", 2)] * 3,
        *[("call_each_many", [n] * 3) for n in (4, 8, 16, 32, 37)],
        *[("call_each", 20)] * 3,
        ("call_each_many", [40] * 3),
    ]
