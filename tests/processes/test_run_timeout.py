"""``processes.run_timeout_ms``: a run not finished that long after its creation is cancelled, as a
cancel would, with the failure code ``run_timeout``; every other run is left alone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from guardrails.settings import setting_set
from kernel.audit import AuditEvent
from kernel.system_schedules import system_schedules
from processes.human_tasks.models import HumanTask
from processes.models import ProcessRun, RunState
from processes.run_timeout import runs_timeout_sweep
from records.models import Record
from tests.processes.engine_support import deploy, invoke, pump
from tests.processes.task_support import approval

pytestmark = pytest.mark.django_db

MINUTE_MS = 60_000
REASON = "run_timeout: not finished within 60000 ms of its creation (processes.run_timeout_ms)"


def _aged(run: ProcessRun, seconds: float) -> ProcessRun:
    ProcessRun.objects.filter(pk=run.pk).update(
        created_at=timezone.now() - timedelta(seconds=seconds)
    )
    run.refresh_from_db()
    return run


def _timeout_audits() -> list[tuple[str, object, dict]]:
    rows = AuditEvent.objects.filter(action="run.cancelled").order_by("id")
    return [(row.target, row.actor_id, row.after) for row in rows]


def test_off_by_default_nothing_times_out(two_notes, alice):
    run = _aged(invoke("acme:two-notes", {"memo": "m"}, alice), 86_400)
    assert runs_timeout_sweep() == 0
    run.refresh_from_db()
    assert (run.state, run.refusal_code) == (RunState.QUEUED, "")


def test_exactly_the_overdue_unfinished_runs_are_cancelled_with_run_timeout(
    two_notes, alice, admin_api
):
    setting_set("processes.run_timeout_ms", MINUTE_MS)
    overdue = _aged(invoke("acme:two-notes", {"memo": "late"}, alice), 120)
    young = _aged(invoke("acme:two-notes", {"memo": "in time"}, alice), 30)
    finished = _aged(invoke("acme:two-notes", {"memo": "done"}, alice), 120)
    ProcessRun.objects.filter(pk=finished.pk).update(state=RunState.COMMITTED, reason="done")
    # A run a worker holds now: told to stop, as a cancel tells it.
    working = _aged(invoke("acme:two-notes", {"memo": "working"}, alice), 120)
    ProcessRun.objects.filter(pk=working.pk).update(
        state=RunState.RUNNING,
        pending_reason="running",
        lease_owner="a worker",
        lease_until=timezone.now() + timedelta(minutes=2),
    )

    assert runs_timeout_sweep() == 2
    for run in (overdue, young, finished, working):
        run.refresh_from_db()
    assert (overdue.state, overdue.reason, overdue.refusal_code) == (
        RunState.CANCELLED,
        REASON,
        "run_timeout",
    )
    assert overdue.finished_at is not None
    assert (young.state, young.refusal_code) == (RunState.QUEUED, "")
    assert (finished.state, finished.reason, finished.refusal_code) == (
        RunState.COMMITTED,
        "done",
        "",
    )
    assert (working.state, working.cancel_requested, working.refusal_code) == (
        RunState.RUNNING,
        True,
        "run_timeout",
    )
    assert _timeout_audits() == [
        (f"run:{overdue.pk}", None, {"code": "run_timeout"}),
        (f"run:{working.pk}", None, {"code": "run_timeout"}),
    ]
    # Told once: the next sweep leaves the working run to stop at its boundary.
    assert runs_timeout_sweep() == 0 and len(_timeout_audits()) == 2

    queue = {run["runId"]: run for run in admin_api.get("/v1/processes/queue").json()["runs"]}
    assert queue[str(overdue.pk)]["failure"] == {
        "stepId": None,
        "code": "run_timeout",
        "message": REASON,
    }
    assert queue[str(young.pk)]["failure"] is None

    # The queued one never executes; the young one, left alone, commits.
    pump()
    young.refresh_from_db()
    assert young.state == RunState.COMMITTED
    assert not overdue.ledger.exists()
    assert Record.reads.filter(record_type="salesOrder").count() == 2


def test_a_working_run_stops_at_its_next_boundary_with_the_code(two_notes, alice, admin_api):
    setting_set("processes.run_timeout_ms", MINUTE_MS)
    run = _aged(invoke("acme:two-notes", {"memo": "m"}, alice), 120)
    ProcessRun.objects.filter(pk=run.pk).update(
        state=RunState.RUNNING,
        pending_reason="running",
        lease_owner="a worker",
        lease_until=timezone.now() + timedelta(minutes=2),
    )
    assert runs_timeout_sweep() == 1
    # Its worker died holding it; the re-delivery sees the cancel at its first boundary.
    ProcessRun.objects.filter(pk=run.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    pump()
    run.refresh_from_db()
    assert (run.state, run.refusal_code, run.cancel_requested) == (
        RunState.CANCELLED,
        "run_timeout",
        False,
    )
    [queued] = admin_api.get("/v1/processes/queue").json()["runs"]
    assert queued["failure"]["code"] == "run_timeout"


def test_a_run_parked_on_a_task_is_cancelled_and_its_task_closed(admin_user, alice, bob):
    deploy(approval(), by=admin_user)
    run = invoke("t:approve-order", {"memo": "PO-1"}, alice)
    pump()
    run.refresh_from_db()
    assert (run.state, run.pending_reason) == (RunState.RUNNING, "awaitingAction")
    setting_set("processes.run_timeout_ms", MINUTE_MS)
    assert runs_timeout_sweep() == 0  # not overdue yet
    _aged(run, 61)
    assert runs_timeout_sweep() == 1
    run.refresh_from_db()
    task = HumanTask.objects.get(run=run)
    assert (run.state, run.reason, run.refusal_code) == (RunState.CANCELLED, REASON, "run_timeout")
    assert task.state == "cancelled"


def test_the_sweep_runs_every_minute_and_the_setting_is_checked(admin_api):
    [job] = [job for job in system_schedules() if job.name == "system.processes.run_timeout"]
    assert (job.func, job.minutes) == ("processes.tasks.runs_timeout_sweep", 1)
    res = admin_api.patch("/v1/settings", {"processes.run_timeout_ms": "60000"}, format="json")
    assert (res.status_code, res.json()["rejection"]["field"]) == (400, "processes.run_timeout_ms")
    res = admin_api.patch("/v1/settings", {"processes.run_timeout_ms": -1}, format="json")
    assert (res.status_code, res.json()["rejection"]["field"]) == (400, "processes.run_timeout_ms")
    res = admin_api.patch("/v1/settings", {"processes.run_timeout_ms": 90_000}, format="json")
    rows = {row["key"]: row for row in res.json()["settings"]}
    assert (
        rows["processes.run_timeout_ms"]["value"],
        rows["processes.run_timeout_ms"]["type"],
    ) == (
        90_000,
        "milliseconds",
    )
