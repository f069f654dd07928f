"""The demo's ``acme:trial-to-paid`` (seed 004's example in our contract), as ``make run`` loads it:
the run ``tb_demo`` starts parks ``awaitingTime``, then ``awaitingInput``; an ``order.paid`` event
for its customer finishes it; unpaid, it opens a task in demo's Inbox (``awaitingAction``) and
its completion finishes it. Time is moved on by hand (the wake-ups are the worker tests')."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from processes.demo import DEMO_TRIAL_CUSTOMER, DEMO_TRIAL_KEY, demo_load
from processes.events.models import EventWait
from processes.human_tasks.models import HumanTask
from processes.invoke import run_start
from processes.models import ProcessRun
from records.models import Record
from tests.conftest import client_for, make_user
from tests.processes.engine_support import ledger, pump

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    user = make_user("demo")
    said: list[str] = []
    demo_load(admin=make_user("admin", admin=True), user=user, write=said.append)
    assert said[-1].startswith("demo trial-to-paid run ")
    return user


def _moved_on(run: ProcessRun) -> ProcessRun:
    """Past the run's due time (its sleep or its wait's timeout), then one round of workers."""
    past = timezone.now() - timedelta(seconds=1)
    EventWait.objects.filter(run=run).update(expires_at=past)
    ProcessRun.objects.filter(pk=run.pk).update(wake_at=past, wait_deadline=past)
    pump()
    run.refresh_from_db()
    return run


def _welcome_note(run: ProcessRun) -> str:
    [row] = [r for r in run.ledger.all() if r.step_id == "welcome"]
    return Record.reads.get(pk=row.pg_row_id).fields["note"]


def test_the_demo_run_sleeps_waits_for_payment_and_the_event_finishes_it(demo):
    run = ProcessRun.objects.get(idempotency_key=DEMO_TRIAL_KEY)
    pump()
    run.refresh_from_db()
    assert (run.pending_reason, run.waiting_step) == ("awaitingTime", "trial"), (
        run.state,
        run.reason,
    )
    assert timedelta(seconds=50) < run.wake_at - run.created_at <= timedelta(minutes=1, seconds=5)
    run = _moved_on(run)
    assert (run.pending_reason, run.waiting_step) == ("awaitingInput", "paid")
    sent = client_for(demo).post(
        "/v1/events",
        {"name": "order.paid", "data": {"customer": DEMO_TRIAL_CUSTOMER}},
        format="json",
    )
    assert (sent.status_code, sent.json()["resumed"]) == (202, 1)
    pump()
    run.refresh_from_db()
    assert run.state == "committed", run.reason
    assert ledger(run) == [
        ("welcome", "confirmed", None),
        ("trial", "confirmed", None),
        ("paid", "confirmed", None),
        ("check-in", "skipped", None),
        ("outcome", "confirmed", None),
    ]
    assert _welcome_note(run) == f"paid (event {sent.json()['eventId']})"
    again: list[str] = []
    demo_load(admin=make_user("admin2", admin=True), user=demo, write=again.append)
    assert ProcessRun.objects.filter(process_id="acme:trial-to-paid").count() == 1  # once only


def test_unpaid_the_demo_opens_a_task_in_demos_inbox_and_its_completion_finishes_it(demo):
    run = run_start(process_id="acme:trial-to-paid", body={"customer": "Slow Payer"}, user=demo)
    pump()
    run = _moved_on(_moved_on(ProcessRun.objects.get(pk=run.pk)))  # the trial, then the wait
    assert (run.pending_reason, run.waiting_step) == ("awaitingAction", "check-in")
    [task] = client_for(demo).get("/v1/tasks", {"runId": str(run.pk)}).json()["tasks"]
    assert (task["title"], task["details"]) == (
        "Check in with Slow Payer: the trial ended unpaid",
        {"customer": "Slow Payer"},
    )
    done = client_for(demo).post(
        f"/v1/tasks/{task['taskId']}/complete", {"output": {"called": True}}, format="json"
    )
    assert done.status_code == 200
    pump()
    run.refresh_from_db()
    assert run.state == "committed", run.reason
    assert HumanTask.objects.get(run=run).state == "completed"
    assert _welcome_note(run) == 'unpaid; checked in: {"called":true}'
