"""Steering over HTTP: cancel a process's queued runs, cancel / roll back / resume one run."""

from __future__ import annotations

from pathlib import Path

import pytest

from guardrails.settings import setting_set
from processes.invoke import run_invoke
from processes.models import ProcessRun
from records.models import Record
from tests.processes.conftest import drain_runs
from tests.processes.test_api_invoke import token_client

pytestmark = pytest.mark.django_db

SEED_PROCESSES = Path(__file__).resolve().parent.parent / "extensions" / "fixtures" / "processes"


def invoke(user, memo: str = "m") -> ProcessRun:
    return run_invoke(process_id="acme:two-notes", body={"memo": memo}, user=user)


def state_of(run: ProcessRun) -> str:
    run.refresh_from_db()
    return run.state


# --- cancel ------------------------------------------------------------------------------------


def test_cancel_a_process_stops_every_queued_run_of_yours(alice, bob, alice_api, two_notes):
    mine = [invoke(alice, str(i)) for i in range(3)]
    theirs = invoke(bob)
    done = invoke(alice, "done")
    ProcessRun.objects.filter(pk=done.pk).update(state="committed")
    res = alice_api.post("/v1/processes/acme:two-notes/cancel")
    assert res.status_code == 200
    assert res.json() == {"cancelled": 3}
    assert [state_of(r) for r in mine] == ["cancelled"] * 3
    assert (state_of(theirs), state_of(done)) == ("queued", "committed")
    drain_runs()
    assert Record.reads.filter(owner=alice).count() == 0  # a queued run never executes


def test_an_admin_cancels_everyones_queued_runs(alice, bob, admin_api, two_notes):
    invoke(alice), invoke(bob)
    assert admin_api.post("/v1/processes/acme:two-notes/cancel").json() == {"cancelled": 2}


def test_cancel_one_queued_run(alice, alice_api, two_notes):
    run = invoke(alice)
    res = alice_api.post(f"/v1/processes/runs/{run.run_id}/cancel")
    assert res.status_code == 200
    assert res.json() == {"runId": str(run.run_id), "state": "cancelled"}
    run.refresh_from_db()
    assert (run.reason, run.outstanding) == ("cancelled by alice", 2)
    drain_runs()
    assert (state_of(run), run.ledger.count(), Record.reads.count()) == ("cancelled", 0, 0)


def test_cancelling_a_finished_run_answers_its_state(alice, alice_api, two_notes):
    run = invoke(alice)
    drain_runs()
    assert alice_api.post(f"/v1/processes/runs/{run.run_id}/cancel").json() == {
        "runId": str(run.run_id),
        "state": "committed",
    }


def test_steering_someone_elses_run_is_404_and_changes_nothing(
    alice, bob_api, admin_api, two_notes
):
    run = invoke(alice)
    for verb in ("cancel", "rollback", "resume"):
        res = bob_api.post(f"/v1/processes/runs/{run.run_id}/{verb}")
        assert res.status_code == 404, verb
        assert res.json() == {"error": "process_run_not_found", "runId": str(run.run_id)}
    assert state_of(run) == "queued"
    assert admin_api.post(f"/v1/processes/runs/{run.run_id}/cancel").json()["state"] == "cancelled"


def test_steering_with_a_token_needs_an_admin_owner_with_extensions_deploy(
    alice, admin_user, two_notes
):
    run = invoke(alice)
    res = token_client(alice, ["extensions:deploy"]).post(f"/v1/processes/runs/{run.run_id}/cancel")
    assert (res.status_code, res.json()["error"]) == (403, "admin_required")
    assert state_of(run) == "queued"
    ok = token_client(admin_user, ["extensions:deploy"]).post(
        f"/v1/processes/runs/{run.run_id}/cancel"
    )
    assert ok.json() == {"runId": str(run.run_id), "state": "cancelled"}


# --- rollback ----------------------------------------------------------------------------------


def test_rollback_of_a_queued_run_is_409_cancel_it_first(alice, alice_api, two_notes):
    run = invoke(alice)
    res = alice_api.post(f"/v1/processes/runs/{run.run_id}/rollback")
    assert res.status_code == 409
    body = res.json()
    assert (body["error"], body["runId"], body["state"]) == (
        "process_run_not_rollbackable",
        str(run.run_id),
        "queued",
    )
    assert "cancel it first" in body["message"]
    assert state_of(run) == "queued"


def test_rollback_of_a_running_run_is_409(alice, alice_api, two_notes):
    run = invoke(alice)
    ProcessRun.objects.filter(pk=run.pk).update(state="running", pending_reason="running")
    res = alice_api.post(f"/v1/processes/runs/{run.run_id}/rollback")
    assert (res.status_code, res.json()["state"]) == (409, "running")


def test_rollback_is_queued_202_then_the_run_reads_rolled_back_then_200_not_queued(
    alice, alice_api, two_notes
):
    setting_set("guardrails.max_deletes_per_min", 1000)
    run = invoke(alice)
    drain_runs()
    created = list(run.ledger.order_by("sequence").values_list("pg_row_id", flat=True))
    res = alice_api.post(f"/v1/processes/runs/{run.run_id}/rollback")
    assert res.status_code == 202
    assert res.json() == {"runId": str(run.run_id), "state": "running", "queued": True}
    drain_runs()
    assert state_of(run) == "rolled_back"
    assert (
        list(run.ledger.order_by("sequence").values_list("disposition", flat=True))
        == ["rolled_back"] * 2
    )
    assert (
        Record.reads.filter(pk__in=created, sync_state__in=["pending", "synced", "sending"]).count()
        == 0
    )
    again = alice_api.post(f"/v1/processes/runs/{run.run_id}/rollback")
    assert again.status_code == 200
    assert again.json() == {"runId": str(run.run_id), "state": "rolled_back", "queued": False}


# --- resume ------------------------------------------------------------------------------------


@pytest.fixture
def stopped_on_a_wait(alice, deploy):
    """A raise-po-and-bill run that ended committed with the bill outstanding (wait budget 0)."""
    deploy((SEED_PROCESSES / "raise-po-and-bill.ts").read_text(), "raise-po-and-bill.ts")
    setting_set("processes.await_source_budget_ms", 0)
    run = run_invoke(
        process_id="acme:raise-po-and-bill", body={"vendorId": "123", "amount": 5}, user=alice
    )
    drain_runs()
    run.refresh_from_db()
    assert (run.state, run.outstanding) == ("committed", 1), run.reason
    setting_set("processes.await_source_budget_ms", 60_000)
    return run


def test_resume_of_a_run_stopped_on_a_wait_is_202_and_it_carries_on(alice_api, stopped_on_a_wait):
    run = stopped_on_a_wait
    started_at = run.started_at
    res = alice_api.post(f"/v1/processes/runs/{run.run_id}/resume")
    assert res.status_code == 202
    assert res.json() == {"runId": str(run.run_id), "state": "queued", "queued": True}
    drain_runs()
    run.refresh_from_db()
    assert (run.state, run.outstanding, run.reason, run.started_at) == (
        "committed",
        0,
        None,
        started_at,
    )
    assert list(run.ledger.order_by("sequence").values_list("step_id", "disposition")) == [
        ("po", "confirmed"),
        ("bill", "confirmed"),
    ]
    assert Record.reads.filter(record_type="purchaseOrder").count() == 1


def test_a_second_quick_resume_is_409(alice_api, stopped_on_a_wait):
    run = stopped_on_a_wait
    assert alice_api.post(f"/v1/processes/runs/{run.run_id}/resume").status_code == 202
    res = alice_api.post(f"/v1/processes/runs/{run.run_id}/resume")
    assert res.status_code == 409
    assert (res.json()["error"], res.json()["state"]) == ("process_run_not_resumable", "queued")


@pytest.mark.parametrize(
    "state, outstanding",
    [
        ("queued", 0),
        ("running", 0),
        ("committed", 0),
        ("failed", 0),
        ("rolled_back", 0),
        ("cancelled", 2),
    ],
)
def test_resume_of_any_other_run_is_409_naming_the_state(
    alice, alice_api, two_notes, state, outstanding
):
    run = invoke(alice)
    ProcessRun.objects.filter(pk=run.pk).update(
        state=state, outstanding=outstanding
    )  # faked upstream state
    res = alice_api.post(f"/v1/processes/runs/{run.run_id}/resume")
    assert res.status_code == 409
    body = res.json()
    assert (body["error"], body["runId"], body["state"]) == (
        "process_run_not_resumable",
        str(run.run_id),
        state,
    )
    assert state in body["message"]
    assert state_of(run) == state


def test_resume_of_a_migration_is_409_process_is_a_migration(alice, alice_api, deploy):
    deploy((SEED_PROCESSES / "migrate-customers.ts").read_text(), "migrate-customers.ts")
    run = ProcessRun.objects.create(
        process_id="acme:migrate-customers",
        module_version=1,
        invoked_by=alice,
        state="committed",
        outstanding=4,
        input={"batch": "2026-10"},
    )
    res = alice_api.post(f"/v1/processes/runs/{run.run_id}/resume")
    assert res.status_code == 409
    body = res.json()
    assert (body["error"], body["runId"]) == ("process_is_a_migration", str(run.run_id))
    assert "invoked again" in body["message"]
    assert state_of(run) == "committed"
