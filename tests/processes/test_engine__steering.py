"""Waits, resume, cancel, switches, ceilings and rollback on request, at the service level."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from guardrails.settings import setting_get, setting_set
from processes.ceilings import ceilings_for
from processes.engine.wakeups import wakeups_due
from processes.errors import ProcessDisabled, RunNotResumable, RunNotRollbackable
from processes.models import Process, ProcessRun
from processes.steering import run_cancel, run_resume, run_rollback
from records.door import door_open
from records.models import Record, RecordWriteState
from sources.scripting import sandbox_script_clear, sandbox_script_set
from tests.processes.engine_support import deploy, invoke, ledger, pump, slow_chain

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).parent.parent / "extensions" / "fixtures" / "processes"
PO_AND_BILL = (FIXTURES / "raise-po-and-bill.ts").read_text()
BODY = {"vendorId": "V-1", "amount": 10}


def _source_is_back() -> None:
    """The source answers again: its script is cleared and the backed-off write is due now."""
    sandbox_script_clear()
    with door_open():
        RecordWriteState.objects.filter(status="pending").update(next_attempt_at=None)


@pytest.fixture
def po_and_bill(admin_user):
    deploy(PO_AND_BILL, by=admin_user)
    return "acme:raise-po-and-bill"


def test_a_wait_parks_the_run_without_a_worker_and_the_verdict_wakes_it(po_and_bill, alice):
    run = invoke(po_and_bill, BODY, alice)
    pump(sources=False)
    run.refresh_from_db()
    assert (run.state, run.pending_reason, run.waiting_step) == ("running", "awaitingSource", "po")
    assert run.lease_owner == "" and run.wait_deadline is not None
    pump()
    run.refresh_from_db()
    assert (run.state, run.outstanding) == ("committed", 0)


def test_a_waiting_runs_budget_end_is_its_due_time_and_one_look_claims_it_once(po_and_bill, alice):
    sandbox_script_set("purchaseOrder", never_answer=True)
    setting_set("processes.await_source_budget_ms", 3000)
    run = invoke(po_and_bill, BODY, alice)
    pump(sources=False)
    run.refresh_from_db()
    assert run.pending_reason == "awaitingSource"
    assert run.wake_at == run.wait_deadline  # the budget's end is in the due-time index
    before = run.delivery
    assert wakeups_due(mode="async", now=run.wake_at - timedelta(milliseconds=1)) == 0  # not yet
    assert wakeups_due(mode="async", now=run.wake_at) == 1
    assert wakeups_due(mode="async", now=run.wake_at) == 0  # claimed: a second look sends nothing
    run.refresh_from_db()
    assert (run.delivery, run.wake_at, run.enqueued_at is not None) == (before + 1, None, True)


def test_a_wait_that_runs_out_commits_with_outstanding_and_resume_finishes_it(po_and_bill, alice):
    sandbox_script_set("purchaseOrder", never_answer=True)
    setting_set("processes.await_source_budget_ms", 1)
    run = invoke(po_and_bill, BODY, alice)
    pump()
    run.refresh_from_db()
    assert (run.state, run.outstanding) == ("committed", 1)
    assert "'po'" in run.reason and "resume" in run.reason
    started = run.started_at
    _source_is_back()
    setting_set("processes.await_source_budget_ms", 60_000)
    resumed = run_resume(user=alice, run_id=str(run.pk))
    assert resumed.state == "queued"
    with pytest.raises(RunNotResumable) as second:
        run_resume(user=alice, run_id=str(run.pk))
    assert second.value.extra["state"] == "queued"
    pump()
    run.refresh_from_db()
    assert (run.state, run.outstanding, run.started_at) == ("committed", 0, started)
    assert Record.reads.filter(record_type="purchaseOrder").count() == 1
    assert [r[:2] for r in ledger(run)] == [("po", "confirmed"), ("bill", "confirmed")]
    assert run.ledger.get(step_id="bill").pg_row_id is not None


@pytest.mark.parametrize("state_maker", ["failed", "cancelled", "finished"])
def test_resume_refuses_every_other_state(po_and_bill, alice, state_maker):
    if state_maker == "failed":
        sandbox_script_set("purchaseOrder", refuse_code="NO", refuse_message="no")
    run = invoke(po_and_bill, BODY, alice)
    if state_maker == "cancelled":
        run_cancel(user=alice, run_id=str(run.pk))
    pump()
    run.refresh_from_db()
    with pytest.raises(RunNotResumable) as refused:
        run_resume(user=alice, run_id=str(run.pk))
    assert refused.value.extra["state"] == run.state


def test_a_cancelled_queued_run_never_executes(po_and_bill, alice):
    run = invoke(po_and_bill, BODY, alice)
    cancelled = run_cancel(user=alice, run_id=str(run.pk))
    assert (cancelled.state, cancelled.outstanding) == ("cancelled", 2)
    pump()
    assert Record.reads.count() == 0
    assert ProcessRun.objects.get(pk=run.pk).ledger.count() == 0


def test_cancel_of_a_parked_run_keeps_what_landed(po_and_bill, alice):
    sandbox_script_set("purchaseOrder", never_answer=True)
    run = invoke(po_and_bill, BODY, alice)
    pump()
    cancelled = run_cancel(user=alice, run_id=str(run.pk))
    assert (cancelled.state, cancelled.outstanding) == ("cancelled", 1)
    assert Record.reads.filter(record_type="purchaseOrder").count() == 1


def test_switching_a_process_off_refuses_invoke_and_stops_a_run_at_its_next_boundary(
    po_and_bill, alice
):
    run = invoke(po_and_bill, BODY, alice)
    pump(sources=False)  # parked on the po's verdict
    Process.objects.filter(pk=po_and_bill).update(is_enabled=False, disabled_reason="vendor audit")
    with pytest.raises(ProcessDisabled) as refused:
        invoke(po_and_bill, BODY, alice)
    assert refused.value.body() == {
        "error": "process_disabled",
        "id": po_and_bill,
        "reason": "vendor audit",
    }
    pump()
    run.refresh_from_db()
    assert (run.state, run.outstanding) == ("committed", 1)
    assert "switched acme:raise-po-and-bill off" in run.reason


def test_the_instance_switch_names_itself(po_and_bill, alice):
    setting_set("processes.enabled", 0)
    with pytest.raises(ProcessDisabled) as refused:
        invoke(po_and_bill, BODY, alice)
    assert refused.value.body()["reason"] == "every process on the instance is switched off"


def test_the_write_ceiling_ends_the_run_committed_naming_it(po_and_bill, alice):
    setting_set("processes.max_writes_per_run", 1)
    run = invoke(po_and_bill, BODY, alice)
    pump()
    run.refresh_from_db()
    assert (run.state, run.outstanding) == ("committed", 1)
    assert "processes.max_writes_per_run (1)" in run.reason


def test_the_runtime_ceiling_counts_from_start_and_survives_resume(po_and_bill, alice):
    sandbox_script_set("purchaseOrder", never_answer=True)
    setting_set("processes.await_source_budget_ms", 1)
    run = invoke(po_and_bill, BODY, alice)
    pump()
    _source_is_back()
    setting_set("processes.await_source_budget_ms", 60_000)
    setting_set("processes.max_run_ms", 1)
    run_resume(user=alice, run_id=str(run.pk))
    pump()
    run.refresh_from_db()
    assert run.state == "committed" and "processes.max_run_ms" in run.reason
    assert run.outstanding == 1


def test_a_derived_runtime_ceiling_says_it_was_derived_and_from_what(admin_user, alice, alice_api):
    """Before: "processes.max_run_ms (400 ms)" while that setting reads 0."""
    assert setting_get("processes.max_run_ms") == 0
    setting_set("processes.slice_cap", 2)
    setting_set("processes.slice_max_ms", 200)  # the derived ceiling: 2 × 200 ms
    deploy(slow_chain("t:slow", steps=2, step_ms=600), by=admin_user)
    run = invoke("t:slow", {}, alice)
    pump()
    body = alice_api.get(f"/v1/processes/runs/{run.pk}").json()
    assert (body["run"]["state"], body["run"]["outstanding"], body["run"]["reason"]) == (
        "committed",
        1,
        "stopped at the per-run runtime ceiling of 400 ms (processes.max_run_ms is 0, so it is "
        "derived: processes.slice_cap 2 × processes.slice_max_ms 200 ms)",
    )
    assert [(s["stepId"], s["disposition"]) for s in body["steps"]] == [("s0", "confirmed")]


def test_a_set_ceiling_is_named_by_its_setting_and_a_derived_write_ceiling_by_its_parts():
    setting_set("processes.max_run_ms", 1500)
    setting_set("processes.max_writes_per_run", 7)
    assert ceilings_for(3).runtime_named() == "processes.max_run_ms (1500 ms)"
    assert ceilings_for(3).writes_named() == "processes.max_writes_per_run (7)"
    setting_set("processes.max_writes_per_run", 0)
    setting_set("processes.slice_cap", 4)
    setting_set("processes.slice_max_rows", 5)
    assert ceilings_for(3).writes_named() == (
        "of 60 writes (processes.max_writes_per_run is 0, so it is derived: "
        "processes.slice_cap 4 × processes.slice_max_rows 5 × 3 steps)"
    )


def test_rollback_on_request_deletes_what_the_run_created_and_is_idempotent(
    po_and_bill, alice, bob
):
    run = invoke(po_and_bill, BODY, alice)
    with pytest.raises(RunNotRollbackable):
        run_rollback(user=alice, run_id=str(run.pk))
    pump()
    _, queued = run_rollback(user=alice, run_id=str(run.pk))
    assert queued is True
    pump(sources=False)
    run.refresh_from_db()
    assert run.state == "rolled_back"
    assert "2 deletes still being sent" in run.reason
    assert [r[:2] for r in ledger(run)] == [("po", "rolled_back"), ("bill", "rolled_back")]
    pump()
    run.refresh_from_db()
    assert "still being sent" not in run.reason
    assert set(Record.reads.values_list("sync_state", flat=True)) == {"deleted"}
    again, queued = run_rollback(user=alice, run_id=str(run.pk))
    assert (again.state, queued) == ("rolled_back", False)


def _unlinked_note(po: dict) -> str:
    return (
        f"kept purchaseOrder {po['pgRowId']} ({po['externalId']}): the source created it and its "
        "link back failed (SOURCE_APPLIED_UNLINKED), so no rollback deletes it; link it with "
        "POST /v1/data/purchaseOrder/settle"
    )


def test_a_run_stopped_on_source_applied_unlinked_reads_failed_not_rolled_back(
    po_and_bill, alice, alice_api
):
    """Nothing was rolled back (the po is kept, the bill never ran): the run reads failed."""
    sandbox_script_set("purchaseOrder", settle_conflict=True)
    run = invoke(po_and_bill, BODY, alice)
    pump()
    body = alice_api.get(f"/v1/processes/runs/{run.pk}").json()
    po, bill = body["steps"]
    assert po["externalId"] and po["externalId"].startswith("PO-")
    sentence = (
        f"netsuite applied the create as {po['externalId']}, but linking it back to the row failed"
    )
    assert (body["run"]["state"], body["run"]["reason"]) == (
        "failed",
        f"step 'po' failed: SOURCE_APPLIED_UNLINKED: {sentence}; {_unlinked_note(po)}",
    )
    assert (po["stepId"], po["disposition"], po["refusal"]) == (
        "po",
        "failed",
        {"code": "SOURCE_APPLIED_UNLINKED", "field": None, "message": sentence},
    )
    assert (bill["stepId"], bill["disposition"]) == ("bill", "skipped")
    assert Record.reads.get(pk=po["pgRowId"]).sync_state == "settle_conflict"


NOTE_THEN_PO = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'acme:note-then-po',
  input: { type: 'object' },
  steps: [
    { id: 'note', recordType: 'legacy_customer', build: (ctx) => ({ parent: { name: 'n' } }) },
    { id: 'po', recordType: 'purchaseOrder', awaitSource: true,
      build: (ctx) => ({ parent: { entity_id: 'V-1' } }) },
  ],
  onFailure: 'rollback',
});
"""


def test_the_rollback_undoes_the_rest_and_the_run_reads_failed_naming_the_kept_record(
    admin_user, alice, alice_api
):
    deploy(NOTE_THEN_PO, by=admin_user)
    sandbox_script_set("purchaseOrder", settle_conflict=True)
    run = invoke("acme:note-then-po", {}, alice)
    pump()
    body = alice_api.get(f"/v1/processes/runs/{run.pk}").json()
    note, po = body["steps"]
    assert [(s["stepId"], s["disposition"]) for s in body["steps"]] == [
        ("note", "rolled_back"),
        ("po", "failed"),
    ]
    assert not Record.reads.filter(pk=note["pgRowId"]).exists()  # the note is gone again
    assert Record.reads.get(pk=po["pgRowId"]).sync_state == "settle_conflict"  # the po is kept
    assert body["run"]["state"] == "failed"
    assert body["run"]["reason"] == (
        f"step 'po' failed: SOURCE_APPLIED_UNLINKED: {po['refusal']['message']}; {_unlinked_note(po)}"
    )
    # Rolled back again on request: still failed, the same record named.
    res = alice_api.post(f"/v1/processes/runs/{run.pk}/rollback")
    assert res.status_code == 202
    pump()
    again = alice_api.get(f"/v1/processes/runs/{run.pk}").json()["run"]
    assert (again["state"], again["reason"]) == (
        "failed",
        f"rolled back on request by alice; {_unlinked_note(po)}",
    )
    assert Record.reads.get(pk=po["pgRowId"]).sync_state == "settle_conflict"


def test_the_rollback_cap_waits_instead_of_refusing(po_and_bill, alice):
    run = invoke(po_and_bill, BODY, alice)
    pump()
    setting_set("guardrails.max_rollback_deletes_per_min", 1)
    run_rollback(user=alice, run_id=str(run.pk))
    pump(sources=False)
    run.refresh_from_db()
    assert (run.state, run.pending_reason) == ("running", "awaitingTime")
    assert run.wake_at > timezone.now()
    assert [r[:2] for r in ledger(run)] == [("po", "confirmed"), ("bill", "rolled_back")]
    setting_set("guardrails.max_rollback_deletes_per_min", 600)
    pump(now=run.wake_at + timedelta(seconds=1))
    run.refresh_from_db()
    assert run.state == "rolled_back"
