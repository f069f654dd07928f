"""Task steps over HTTP with real workers: a run parks on a person's task holding no worker, and
goes on when they complete it — or fails TASK_REJECTED / TASK_EXPIRED, as ``onRefused`` says.
A decision counts once: two completes at once get one 200 and one 409, clusters killed before
and during the run's wake-up lose nothing and do nothing twice, and a wake-up the broker lost is
sent again by the lanes' watch."""

from __future__ import annotations

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from kernel.audit import AuditEvent
from processes.human_tasks.models import HumanTask
from processes.models import ProcessRun
from records.models import Record
from tests.concurrency import race
from tests.conftest import client_for, make_user
from tests.processes.engine_support import deploy, ledger
from tests.processes.task_support import approval
from tests.workers import QCluster, wait_until

pytestmark = [pytest.mark.workers, pytest.mark.django_db(transaction=True)]

TERMINAL = ["committed", "failed", "rolled_back", "cancelled"]
LEASE_S = 3
FAST = {"TURBOBASE_RUN_LEASE_S": str(LEASE_S), "TURBOBASE_TASK_RETRY": "900"}


def _invoke(client: APIClient, memo: str, process_id: str = "t:approve-order") -> str:
    res = client.post(f"/v1/processes/{process_id}", {"memo": memo}, format="json")
    assert res.status_code == 202, res.content
    return res.json()["runId"]


def _parked(run_id: str) -> bool:
    return ProcessRun.objects.filter(pk=run_id, pending_reason="awaitingAction").exists()


def _ended(run_id: str) -> ProcessRun | None:
    return ProcessRun.objects.filter(pk=run_id, state__in=TERMINAL).first()


def _task_id(client: APIClient, run_id: str) -> str:
    tasks = client.get("/v1/tasks", {"runId": run_id, "state": "open"}).json()["tasks"]
    assert len(tasks) == 1, tasks
    return tasks[0]["taskId"]


def test_park_then_complete_and_the_run_goes_on_with_the_output(admin_user, alice, bob, tmp_path):
    deploy(approval(), by=admin_user)
    alice_api, bob_api = client_for(alice), client_for(bob)
    with QCluster(workers=2, log_path=tmp_path / "q.log"):
        run_id = _invoke(alice_api, "PO-7")
        wait_until(lambda: _parked(run_id), timeout=60, message="the run parked on its task")
        run = ProcessRun.objects.get(pk=run_id)
        assert (run.state, run.lease_owner) == ("running", "")  # parked: no worker holds it
        assert alice_api.get(f"/v1/processes/runs/{run_id}").json()["run"]["pendingReason"] == (
            "awaitingAction"
        )
        task_id = _task_id(bob_api, run_id)
        # Someone else is told there is no such task; the assignee's two tabs race to complete.
        nosy = alice_api.post(f"/v1/tasks/{task_id}/complete", {"output": 1}, format="json")
        assert nosy.status_code == 404
        tabs = [client_for(bob), client_for(bob)]
        answers = race(
            2,
            lambda i: tabs[i].post(
                f"/v1/tasks/{task_id}/complete", {"output": {"note": f"tab {i}"}}, format="json"
            ),
        )
        assert sorted(a.status_code for a in answers) == [200, 409], answers
        winner = next(a for a in answers if a.status_code == 200).json()["output"]["note"]
        wait_until(lambda: _ended(run_id), timeout=60, message="the run ended")
    run = ProcessRun.objects.get(pk=run_id)
    assert run.state == "committed", run.reason
    assert ledger(run) == [("approve", "confirmed", None), ("order", "confirmed", None)]
    assert Record.reads.get(record_type="salesOrder").fields["memo"] == f"PO-7: {winner}"
    task = HumanTask.objects.get(pk=task_id)
    assert (task.state, task.output, task.decided_by) == ("completed", {"note": winner}, bob)
    assert AuditEvent.objects.filter(action="task.completed", target=f"task:{task_id}").count() == 1
    again = bob_api.post(f"/v1/tasks/{task_id}/reject", {"reason": "late"}, format="json")
    assert (again.status_code, again.json()["state"]) == (409, "completed")


def test_a_group_member_rejects_and_on_refused_decides_the_run(admin_user, alice, tmp_path):
    carol = make_user("carol", groups=("finance",))
    deploy(approval(assignee="group:finance"), by=admin_user)
    deploy(
        approval("t:approve-or-not", assignee="group:finance", on_refused="continue"),
        by=admin_user,
        name="processes/or-not.ts",
    )
    alice_api, carol_api = client_for(alice), client_for(carol)
    with QCluster(workers=2, log_path=tmp_path / "q.log"):
        stops = _invoke(alice_api, "PO-1")
        goes_on = _invoke(alice_api, "PO-2", "t:approve-or-not")
        for run_id in (stops, goes_on):
            wait_until(lambda run_id=run_id: _parked(run_id), timeout=60, message="parked")
            res = carol_api.post(
                f"/v1/tasks/{_task_id(carol_api, run_id)}/reject",
                {"reason": "over budget"},
                format="json",
            )
            assert (res.status_code, res.json()["state"], res.json()["decidedBy"]) == (
                200,
                "rejected",
                "carol",
            )
        wait_until(lambda: _ended(stops) and _ended(goes_on), timeout=60, message="both ended")
    stopped, went_on = ProcessRun.objects.get(pk=stops), ProcessRun.objects.get(pk=goes_on)
    message = "'Approve PO-1' rejected by carol: over budget"
    assert (stopped.state, stopped.reason) == (
        "failed",
        f"step 'approve' failed: TASK_REJECTED: {message}",
    )
    assert ledger(stopped) == [("approve", "failed", "TASK_REJECTED"), ("order", "skipped", None)]
    assert went_on.state == "committed", went_on.reason
    assert ledger(went_on) == [("approve", "failed", "TASK_REJECTED"), ("order", "confirmed", None)]
    memos = list(
        Record.reads.filter(record_type="salesOrder").values_list("fields__memo", flat=True)
    )
    assert memos == ["PO-2: not approved"]


def test_a_timeout_expires_the_task_and_fails_the_step_task_expired(
    admin_user, alice, bob, tmp_path
):
    deploy(approval(timeout="2s"), by=admin_user)
    with QCluster(workers=2, log_path=tmp_path / "q.log"):
        run_id = _invoke(client_for(alice), "PO-9")
        wait_until(lambda: _ended(run_id), timeout=60, message="the timeout ended the run")
    run = ProcessRun.objects.get(pk=run_id)
    task = HumanTask.objects.get(run_id=run_id)
    # Measured, never asserted: how long after its timeout the expiry was recorded.
    print(
        f"task timeout 2 s: expired {(task.decided_at - task.expires_at).total_seconds():.2f} s late"
    )
    assert task.expires_at - task.created_at == pytest.approx(
        timedelta(seconds=2), abs=timedelta(seconds=1)
    )
    assert (task.state, task.decided_by) == ("expired", None)
    assert run.state == "failed"
    assert ledger(run) == [("approve", "failed", "TASK_EXPIRED"), ("order", "skipped", None)]
    assert run.ledger.get(step_id="approve").refusal["field"] == "timeout"
    shown = client_for(bob).get("/v1/tasks").json()["tasks"]
    assert [t["state"] for t in shown] == ["expired"]
    late = client_for(bob).post(f"/v1/tasks/{task.pk}/complete", {"output": 1}, format="json")
    assert (late.status_code, late.json()["state"]) == (409, "expired")


def test_clusters_killed_around_a_completion_lose_nothing_and_do_nothing_twice(
    admin_user, alice, bob, tmp_path
):
    # The order step after the task is busy for 0.9 s (its CPU budget is 1 s): a cluster killed then has
    # already recorded the task's step, and the next delivery must not record it again.
    deploy(approval(then_ms=900), by=admin_user)
    log = tmp_path / "q.log"
    first = QCluster(workers=2, log_path=log, extra_env=FAST).start()
    try:
        run_id = _invoke(client_for(alice), "PO-3")
        wait_until(lambda: _parked(run_id), timeout=60, message="parked")
    finally:
        first.kill()
    # Completed while no worker runs at all: the wake-up waits for one.
    task_id = _task_id(client_for(bob), run_id)
    done = client_for(bob).post(
        f"/v1/tasks/{task_id}/complete", {"output": {"note": "go"}}, format="json"
    )
    assert done.status_code == 200
    second = QCluster(workers=2, log_path=log, extra_env=FAST).start()
    try:
        wait_until(
            lambda: ProcessRun.objects.get(pk=run_id).ledger.filter(step_id="approve").exists(),
            timeout=60,
            message="the task's step recorded",
        )
    finally:
        second.kill()  # mid-way through the busy order step
    assert _ended(run_id) is None
    with QCluster(workers=2, log_path=log, extra_env=FAST):
        wait_until(lambda: _ended(run_id), timeout=90, message="the run ended")
    run = ProcessRun.objects.get(pk=run_id)
    assert run.state == "committed", run.reason
    assert ledger(run) == [("approve", "confirmed", None), ("order", "confirmed", None)]
    assert list(Record.reads.values_list("fields__memo", flat=True)) == ["PO-3: go"]
    assert HumanTask.objects.get(pk=task_id).state == "completed"
    assert AuditEvent.objects.filter(action="task.completed").count() == 1


def test_a_wake_up_lost_after_the_decision_is_sent_again_by_the_lanes_watch(
    admin_user, alice, bob, tmp_path
):
    from django_q.models import OrmQ

    deploy(approval(), by=admin_user)
    log = tmp_path / "q.log"
    with QCluster(workers=2, log_path=log, extra_env=FAST):
        run_id = _invoke(client_for(alice), "PO-5")
        wait_until(lambda: _parked(run_id), timeout=60, message="parked")
    task_id = _task_id(client_for(bob), run_id)
    done = client_for(bob).post(
        f"/v1/tasks/{task_id}/complete", {"output": {"note": "ok"}}, format="json"
    )
    assert done.status_code == 200
    # The delivery the decision sent is lost (a broker that forgot it): the run still says it waits
    # for a worker, and the watch sends it again once a lease has passed since it was sent.
    assert OrmQ.objects.all().delete()[0] == 1
    assert ProcessRun.objects.get(pk=run_id).pending_reason == "queued"
    with QCluster(workers=2, log_path=log, extra_env=FAST):
        wait_until(lambda: _ended(run_id), timeout=90, message="the run ended")
    run = ProcessRun.objects.get(pk=run_id)
    assert run.state == "committed", run.reason
    assert ledger(run) == [("approve", "confirmed", None), ("order", "confirmed", None)]
    assert list(Record.reads.values_list("fields__memo", flat=True)) == ["PO-5: ok"]
