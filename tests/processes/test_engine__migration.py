"""eachRow migrations: slices, row keys, visits, the slice cap, cancel and resume."""

from __future__ import annotations

from pathlib import Path

import pytest

from guardrails.settings import setting_set
from processes.engine.runner import run_deliver
from processes.errors import ProcessIsMigration
from processes.models import ProcessRun
from processes.steering import run_cancel, run_resume
from records.boundary import record_create, record_update
from records.models import Record
from records.trail import Actor
from tests.processes.engine_support import deploy, invoke, pump

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).parent.parent / "extensions" / "fixtures" / "processes"
TRACKED = "acme:migrate-customers-tracked"


@pytest.fixture
def tracked(admin_user):
    deploy((FIXTURES / "migrate-customers-tracked.ts").read_text(), by=admin_user)
    return TRACKED


def _items(user, count: int, batch: str = "2026-10", start: int = 0) -> list[Record]:
    actor = Actor(user=user)
    return [
        record_create(
            actor=actor,
            record_type="migration_item",
            parent={
                "legacy_id": f"L{n:05d}",
                "company_name": f"Company {n}",
                "status": "pending",
                "batch": batch,
            },
        ).record
        for n in range(start, start + count)
    ]


def test_slices_queue_themselves_under_one_run_until_nothing_is_outstanding(tracked, alice):
    setting_set("processes.slice_max_rows", 10)
    _items(alice, 25)
    run = invoke(tracked, {"batch": "2026-10"}, alice)
    pump()
    run.refresh_from_db()
    assert (run.state, run.outstanding, run.slices, run.reason) == ("committed", 0, 3, None)
    assert Record.reads.filter(record_type="customer").count() == 25
    assert set(
        Record.reads.filter(record_type="migration_item").values_list("fields__status", flat=True)
    ) == {"sent"}
    rows = run.ledger.filter(step_id="create")
    assert sorted(set(rows.values_list("slice", flat=True))) == [1, 2, 3]
    first = rows.get(row_key="L00000")
    assert (first.disposition, first.slice) == ("confirmed", 1)
    mark = run.ledger.get(step_id="mark", row_key="L00000")
    item = Record.reads.get(pk=mark.pg_row_id)
    assert item.fields["target_pg_row_id"] == str(first.pg_row_id)
    assert run.writes == 50


def test_a_slice_finishes_at_least_one_row_even_on_a_one_millisecond_budget(tracked, alice):
    setting_set("processes.slice_max_ms", 1)
    setting_set("processes.max_run_ms", 600_000)  # the run's ceiling is not what this is about
    _items(alice, 4)
    run = invoke(tracked, {"batch": "2026-10"}, alice)
    pump()
    run.refresh_from_db()
    assert (run.state, run.outstanding, run.reason) == ("committed", 0, None)
    assert 2 <= run.slices <= 4  # the first row of every slice is finished whatever the clock says
    assert sorted(set(run.ledger.filter(step_id="create").values_list("slice", flat=True))) == list(
        range(1, run.slices + 1)
    )
    assert Record.reads.filter(record_type="customer").count() == 4
    assert run.writes == 8


VERSIONED = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:versioned-migration',
  input: { type: 'object' },
  eachRow: {
    outstanding: () => 'migration_item?select=pg_row_id,legacy_id,company_name&status=eq.pending&order=legacy_id',
    key: 'legacy_id',
  },
  steps: [
    { id: 'create', recordType: 'customer',
      build: (ctx) => ({ parent: { company_name: '%s ' + ctx.row!.company_name } }) },
    { id: 'mark', recordType: 'migration_item', update: { pgRowId: (ctx) => ctx.row!.pg_row_id as string },
      rollback: 'keep', build: () => ({ parent: { status: 'sent' } }) },
  ],
});
"""


def test_a_new_version_deployed_between_slices_is_the_next_slices_and_the_run_read_shows_each(
    admin_user, alice, alice_api
):
    setting_set("processes.slice_max_rows", 2)
    deploy(VERSIONED % "v1", by=admin_user)
    _items(alice, 4)
    run = invoke("t:versioned-migration", {}, alice)
    run_deliver(str(run.pk), run.delivery)  # slice 1, on version 1
    run.refresh_from_db()
    assert (run.state, run.slices, run.outstanding) == ("running", 1, 2)
    deploy(VERSIONED % "v2", by=admin_user)  # the deploy drops this process's cached answers
    pump()
    run.refresh_from_db()
    assert (run.state, run.slices, run.outstanding, run.module_version) == ("committed", 2, 0, 2)
    names = sorted(
        Record.reads.filter(record_type="customer").values_list("fields__company_name", flat=True)
    )
    assert names == ["v1 Company 0", "v1 Company 1", "v2 Company 2", "v2 Company 3"]
    body = alice_api.get(f"/v1/processes/runs/{run.run_id}").json()["run"]
    assert [(s["slice"], s["moduleVersion"]) for s in body["sliceLog"]] == [(1, 1), (2, 2)]
    assert body["moduleVersion"] == 2


def test_offering_a_row_again_writes_nothing_and_hands_on_the_first_record(tracked, alice):
    items = _items(alice, 3)
    first_run = invoke(tracked, {"batch": "2026-10"}, alice)
    pump()
    for item in items:  # the rows come back into the predicate (an operator reset them)
        record_update(
            actor=Actor(user=alice),
            record_type="migration_item",
            pg_row_id=item.pk,
            parent={"status": "pending"},
        )
    again = invoke(tracked, {"batch": "2026-10"}, alice)
    pump()
    again.refresh_from_db()
    assert again.state == "committed"
    assert Record.reads.filter(record_type="customer").count() == 3
    create = again.ledger.get(step_id="create", row_key="L00000")
    original = ProcessRun.objects.get(pk=first_run.pk).ledger.get(
        step_id="create", row_key="L00000"
    )
    assert (create.disposition, create.pg_row_id, create.created_record) == (
        "skipped",
        original.pg_row_id,
        False,
    )
    mark = again.ledger.get(step_id="mark", row_key="L00000")
    assert mark.disposition == "confirmed"
    assert Record.reads.get(pk=mark.pg_row_id).fields["target_pg_row_id"] == str(original.pg_row_id)
    empty = invoke(tracked, {"batch": "2026-10"}, alice)
    pump()
    empty.refresh_from_db()
    assert (empty.state, empty.outstanding, empty.ledger.count()) == ("committed", 0, 0)


def test_a_predicate_that_never_excludes_done_rows_stops_at_the_slice_cap(admin_user, alice):
    deploy((FIXTURES / "migrate-customers.ts").read_text(), by=admin_user)
    setting_set("processes.slice_max_rows", 5)
    setting_set("processes.slice_cap", 3)
    actor = Actor(user=alice)
    for n in range(8):
        record_create(
            actor=actor,
            record_type="legacy_customer",
            parent={"id": f"C{n}", "company_name": f"C {n}"},
        )
    run = invoke("acme:migrate-customers", {}, alice)
    pump()
    run.refresh_from_db()
    assert (run.state, run.slices) == ("committed", 3)
    assert "processes.slice_cap" in run.reason and "invoke" in run.reason
    assert run.outstanding > 0
    # The same first five rows come back every slice: created once, then handed on as skipped.
    assert Record.reads.filter(record_type="customer").count() == 5
    assert list(run.ledger.filter(slice=3).values_list("disposition", flat=True)) == ["skipped"] * 5
    with pytest.raises(ProcessIsMigration):
        run_resume(user=alice, run_id=str(run.pk))


def test_cancel_between_slices_queues_no_continuation(tracked, alice):
    setting_set("processes.slice_max_rows", 4)
    _items(alice, 10)
    run = invoke(tracked, {"batch": "2026-10"}, alice)
    from processes.engine.runner import run_deliver

    run_deliver(str(run.pk))  # one slice
    run.refresh_from_db()
    assert (run.state, run.pending_reason, run.outstanding) == ("running", "queued", 6)
    cancelled = run_cancel(user=alice, run_id=str(run.pk))
    assert (cancelled.state, cancelled.outstanding) == ("cancelled", 6)
    pump()
    assert Record.reads.filter(record_type="customer").count() == 4


def test_a_row_that_fails_ends_the_run_with_the_rest_outstanding(tracked, alice):
    from records.errors import HookRejection
    from records.hooks import hook_register

    def refuse(ctx):
        if ctx.record["parent"].get("company_name") == "Company 1":
            raise HookRejection("company 1 is blocked", code="BLOCKED", field="parent.company_name")

    unregister = hook_register(slot="before_save", record_type="customer", hook=refuse)
    try:
        _items(alice, 4)
        run = invoke(tracked, {"batch": "2026-10"}, alice)
        pump()
    finally:
        unregister()
    run.refresh_from_db()
    assert (run.state, run.outstanding) == ("failed", 2)
    assert "L00001" in run.reason and "BLOCKED" in run.reason
    failed = run.ledger.get(step_id="create", row_key="L00001")
    assert (failed.disposition, failed.refusal_code, failed.refusal_field) == (
        "failed",
        "BLOCKED",
        "parent.company_name",
    )
    assert run.ledger.get(step_id="mark", row_key="L00001").disposition == "skipped"
    assert Record.reads.filter(record_type="customer").count() == 1


def test_cancel_during_a_slice_stops_after_the_row_it_is_on(tracked, alice):
    from records.hooks import hook_register

    setting_set("processes.slice_max_rows", 10)
    _items(alice, 6)
    run = invoke(tracked, {"batch": "2026-10"}, alice)

    def cancel_on_the_third_row(ctx):
        if ctx.record["parent"].get("company_name") == "Company 2":
            assert run_cancel(
                user=alice, run_id=str(run.pk)
            ).cancel_requested  # the slice holds the run

    unregister = hook_register(
        slot="before_save", record_type="customer", hook=cancel_on_the_third_row
    )
    try:
        pump()
    finally:
        unregister()
    run.refresh_from_db()
    assert (run.state, run.outstanding) == ("cancelled", 3)
    # The row in hand finished both its steps; the rows never started are outstanding.
    assert run.ledger.get(step_id="mark", row_key="L00002").disposition == "confirmed"
    assert not run.ledger.filter(row_key="L00003").exists()
    assert Record.reads.filter(record_type="customer").count() == 3
    pump()
    assert ProcessRun.objects.get(pk=run.pk).state == "cancelled"
