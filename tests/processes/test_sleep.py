"""Sleep steps in-process (``pump`` plays the workers): the contract, parking ``awaitingTime``
with ``wakeAt`` on the run read, never waking early, and a computed duration that is no duration.
The same journeys with real workers (and a worker killed while a run sleeps) are in
``test_sleep_workers.py``."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.test import TestCase
from django.utils import timezone
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from processes.contract import ContractInvalid
from processes.engine.runner import run_deliver
from processes.engine.wakeups import wakeups_due
from processes.models import ProcessRun, ProcessRunStep
from records.models import Record
from tests.conftest import client_for
from tests.processes.engine_support import deploy, invoke, ledger, pump
from tests.processes.sleep_support import sleeper

pytestmark = pytest.mark.django_db


def _parked(admin_user, alice, source: str) -> ProcessRun:
    deploy(source, by=admin_user)
    run = invoke("t:nap", {"memo": "M-1", "wait": "3h"}, alice)
    pump()
    run.refresh_from_db()
    return run


def test_a_sleep_parks_awaiting_time_with_wake_at_and_wakes_only_when_due(admin_user, alice):
    before = timezone.now()
    run = _parked(admin_user, alice, sleeper(sleep="'30d'"))
    assert (run.state, run.pending_reason, run.waiting_step, run.lease_owner) == (
        "running",
        "awaitingTime",
        "nap",
        "",
    )
    assert timedelta(days=30) <= run.wake_at - before < timedelta(days=30, seconds=30)
    read = client_for(alice).get(f"/v1/processes/runs/{run.pk}").json()
    assert read["run"]["pendingReason"] == "awaitingTime"
    assert read["run"]["wakeAt"] == run.wake_at.isoformat().replace("+00:00", "Z")
    assert read["run"]["retryAt"] is None
    assert read["steps"] == []
    # A stray delivery before the time (a lost wake-up sent again) parks it again, same time.
    wake_at = run.wake_at
    ProcessRun.objects.filter(pk=run.pk).update(pending_reason="running")  # the sweeper's bait
    pump()
    run.refresh_from_db()
    assert (run.pending_reason, run.wake_at, ledger(run)) == ("awaitingTime", wake_at, [])
    # Thirty days on.
    past = timezone.now() - timedelta(seconds=1)
    ProcessRun.objects.filter(pk=run.pk).update(wake_at=past, wait_deadline=past)
    pump()
    run.refresh_from_db()
    assert run.state == "committed", run.reason
    assert ledger(run) == [("nap", "confirmed", None), ("after", "confirmed", None)]
    memo = Record.reads.get(record_type="salesOrder").fields["memo"]
    assert memo == f"M-1 woke {past.isoformat()}"
    assert client_for(alice).get(f"/v1/processes/runs/{run.pk}").json()["run"]["wakeAt"] is None


def test_a_computed_duration_is_read_from_the_context(admin_user, alice):
    before = timezone.now()
    run = _parked(admin_user, alice, sleeper(sleep="(ctx) => ctx.input.wait"))
    assert run.pending_reason == "awaitingTime"
    assert timedelta(hours=3) <= run.wake_at - before < timedelta(hours=3, seconds=30)


@pytest.mark.parametrize("returned", ["'3 hours'", "42", "null", "'0s'"])
def test_a_computed_duration_that_is_none_fails_the_step_by_code(admin_user, alice, returned):
    run = _parked(admin_user, alice, sleeper(sleep=f"() => {returned}"))
    assert run.state == "failed"
    assert ledger(run) == [("nap", "failed", "SLEEP_DURATION_INVALID"), ("after", "skipped", None)]
    assert run.reason.startswith("step 'nap' failed: SLEEP_DURATION_INVALID: sleep must")


def test_a_when_that_declines_skips_the_sleep(admin_user, alice):
    source = sleeper(sleep="'2h', when: () => false")
    run = _parked(admin_user, alice, source)
    assert run.state == "committed", run.reason
    assert ledger(run) == [("nap", "skipped", None), ("after", "confirmed", None)]


def test_cancelling_a_sleeping_run_ends_it_at_once(admin_user, alice):
    run = _parked(admin_user, alice, sleeper(sleep="'2h'"))
    res = client_for(alice).post(f"/v1/processes/runs/{run.pk}/cancel")
    assert res.status_code in (200, 202), res.content
    run.refresh_from_db()
    assert (run.state, run.outstanding) == ("cancelled", 2)


@pytest.mark.parametrize(
    ("step", "field"),
    [
        ("{ id: 'a', sleep: '7 days' }", "steps[0].sleep"),
        ("{ id: 'a', sleep: '1.5h' }", "steps[0].sleep"),
        ("{ id: 'a', sleep: 30 }", "steps[0].sleep"),
        ("{ id: 'a', sleep: '0s' }", "steps[0].sleep"),
        ("{ id: 'a', sleep: '99999d' }", "steps[0].sleep"),
        ("{ id: 'a', sleep: '2h', recordType: 'salesOrder' }", "steps[0].recordType"),
        ("{ id: 'a', sleep: '2h', when: true }", "steps[0].when"),
    ],
)
def test_the_contract_refuses_a_bad_sleep_step_by_its_field(admin_user, step, field):
    source = (
        "import { defineProcess } from '@turbobase/extensions';\n"
        f"export default defineProcess({{ id: 't:bad', input: {{ type: 'object' }}, steps: [{step}] }});\n"
    )
    with pytest.raises(ContractInvalid) as refused:
        deploy(source, by=admin_user)
    assert refused.value.field == field


def test_a_migration_may_not_sleep(admin_user):
    source = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({ id: 't:bad', input: { type: 'object' },
  eachRow: { outstanding: () => 'migration_item?select=id', key: 'id' },
  steps: [{ id: 'nap', sleep: '1h' }] });
"""
    with pytest.raises(ContractInvalid) as refused:
        deploy(source, by=admin_user)
    assert refused.value.field == "steps[0].sleep"


def test_many_sleepers_due_at_once_are_all_claimed_by_one_look_and_each_woken_once(
    admin_user, alice
):
    """300 sleepers due in the same second: one look of the lanes' watch claims them all (one
    statement, one bulk insert of the broker's rows), each gets exactly one wake-up carrying its
    new delivery number, and a second look sends nothing."""
    run = _parked(admin_user, alice, sleeper(sleep="'1h'"))
    copies = []
    for _ in range(299):
        copy = ProcessRun.objects.get(pk=run.pk)
        copy.run_id = uuid.uuid4()
        copies.append(copy)
    ProcessRun.objects.bulk_create(copies)
    due = timezone.now() - timedelta(seconds=1)
    ProcessRun.objects.filter(process_id="t:nap").update(wake_at=due, wait_deadline=due)
    before = dict(ProcessRun.objects.values_list("run_id", "delivery"))
    OrmQ.objects.all().delete()
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert wakeups_due(mode="async") == 300
    sent = [SignedPackage.loads(row.payload) for row in OrmQ.objects.filter(key="tb_async")]
    assert sorted(tuple(task["args"]) for task in sent) == sorted(
        (str(run_id), delivery + 1) for run_id, delivery in before.items()
    )
    assert {task["func"] for task in sent} == {"processes.tasks.run_deliver"}
    after = ProcessRun.objects.filter(process_id="t:nap")
    assert after.filter(wake_at__isnull=True, enqueued_at__isnull=False).count() == 300
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert wakeups_due(mode="async") == 0  # claimed: a second look sends nothing
    assert OrmQ.objects.count() == 300
    # Each wake-up, delivered as a worker would, records the nap's end once; a stale one does nothing.
    for task in sent:
        with TestCase.captureOnCommitCallbacks(execute=True):
            run_deliver(*task["args"])
    with TestCase.captureOnCommitCallbacks(execute=True):
        run_deliver(*sent[0]["args"])
    pump()
    assert set(after.values_list("state", flat=True)) == {"committed"}
    naps = ProcessRunStep.objects.filter(run__process_id="t:nap", step_id="nap")
    assert naps.filter(disposition="confirmed").count() == naps.count() == 300
