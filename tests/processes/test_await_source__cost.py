"""What an awaitSource step's wait costs, end to end with the outbound drain on the sandbox: the
verdict is folded into the waiting ledger row in the verdict's own transaction, the run is woken
once by one conditional UPDATE, and the resumed delivery reads the step as done."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from processes.engine import parking
from processes.engine.ending import run_redeliver
from processes.engine.lease import lease_seconds
from processes.engine.wakeups import waits_sweep
from processes.lanes import DELIVER_TASK
from processes.models import ProcessRun
from processes.pending_detail import pending_detail
from processes.tasks import run_deliver
from records.models import Record
from sources.outbound import outbound_drain
from sources.scripting import sandbox_script_set
from tests.processes.engine_support import deploy, invoke, ledger

PROCESS = """
import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'acme:await-one',
  input: { type: 'object' },
  steps: [
    { id: 'po', recordType: 'purchaseOrder', awaitSource: true,
      build: () => ({ parent: { entity_id: 'V-1' } }) },
    { id: 'note', recordType: 'legacy_customer',
      build: (ctx) => ({ parent: { note: ctx.steps.po.externalId } }) },
  ],
  onFailure: 'rollback',
});
"""

# At most these statements in each phase of one awaitSource step followed by one plain step (as
# measured; one more where a delivery re-reads its process's switch, at most once a second; a
# regression fails here). The wait's own share: the park rides the step's own lease proof (no
# statement of its own), the verdict's fold into the waiting ledger row (a read of the waiting
# rows and one UPDATE, in the verdict's transaction), the wake-up (1 UPDATE … RETURNING and the
# broker's insert). The resumed delivery reads the step as done: nothing of the wait is left for it.
COST = {
    "sqlite": {"first": 18, "drain": 57, "resumed": 16},
    "postgresql": {"first": 13, "drain": 57, "resumed": 11},
}
RUN_WRITE = re.compile(r'UPDATE "?process_run"? ')
WAIT_IN_DRAIN = 4  # waiting rows' read, their fold, the wake-up, its broker row


def _deliveries() -> list[tuple]:
    """Take the queued run deliveries off the broker (a worker's pop), oldest first."""
    taken = []
    for row in OrmQ.objects.order_by("id"):
        task = SignedPackage.loads(row.payload)
        if task["func"] == DELIVER_TASK:
            taken.append(task["args"])
            row.delete()
    return taken


def _counted(fn: Callable[[], Any]) -> list[str]:
    with CaptureQueriesContext(connection) as seen, TestCase.captureOnCommitCallbacks(execute=True):
        fn()
    return [q["sql"] for q in seen.captured_queries]


def _wait_statements(sqls: list[str]) -> list[str]:
    return [s for s in sqls if "process_run_step" in s or "process_run SET delivery" in s]


@pytest.mark.django_db
def test_an_await_source_step_costs_its_write_its_wake_up_and_its_ledger_row(admin_user, alice):
    deploy(PROCESS, by=admin_user)
    with TestCase.captureOnCommitCallbacks(execute=True):
        run = invoke("acme:await-one", {}, alice)

    [first] = _deliveries()
    first_sqls = _counted(lambda: run_deliver(*first))
    drain_sqls = _counted(lambda: outbound_drain(record_type="purchaseOrder"))
    [resumed] = _deliveries()
    waiting = ProcessRun.objects.get(pk=run.pk)  # woken, not yet taken: its reason still reads
    assert (waiting.pending_reason, pending_detail(waiting)) == (
        "awaitingSource",
        {"source": "netsuite", "pacedUntil": None},
    )
    resumed_sqls = _counted(lambda: run_deliver(*resumed))

    run.refresh_from_db()
    assert (run.state, _deliveries()) == ("committed", [])  # two deliveries for the two steps
    po, note = run.ledger.order_by("sequence")
    assert po.external_id.startswith("PO-") and not po.awaiting_verdict
    assert Record.reads.get(pk=note.pg_row_id).fields == {"note": po.external_id}
    measured = {"first": len(first_sqls), "drain": len(drain_sqls), "resumed": len(resumed_sqls)}
    ceiling = COST[connection.vendor]
    assert all(measured[phase] <= ceiling[phase] for phase in ceiling), measured
    # The first delivery's one write of the run row after its claim is the step's lease proof,
    # which parks it; the write state's id is not read back, nor its verdict read.
    assert len([s for s in first_sqls[1:] if RUN_WRITE.search(s)]) == 1
    assert not [s for s in first_sqls if s.startswith("SELECT") and "record_write_state" in s]
    # The resumed delivery does nothing for the wait: it reads its ledger and writes step two.
    assert not [s for s in resumed_sqls if "record_write_state" in s]
    assert [s for s in resumed_sqls if 'UPDATE "process_run_step"' in s] == []
    assert len(_wait_statements(drain_sqls)) == WAIT_IN_DRAIN - 1  # + the broker's row


@pytest.mark.django_db
def test_a_refused_verdict_is_folded_with_the_refusal_and_the_run_rolls_back(admin_user, alice):
    deploy(PROCESS, by=admin_user)
    sandbox_script_set("purchaseOrder", refuse_code="VENDOR_INACTIVE", refuse_message="inactive")
    with TestCase.captureOnCommitCallbacks(execute=True):
        run = invoke("acme:await-one", {}, alice)
    [first] = _deliveries()
    run_deliver(*first)
    with TestCase.captureOnCommitCallbacks(execute=True):
        outbound_drain(record_type="purchaseOrder")

    # Folded with the verdict, before any delivery: the step failed, its reason readable.
    po = run.ledger.get(step_id="po")
    assert (po.awaiting_verdict, po.disposition) == (False, "failed")
    assert (po.refusal_code, po.refusal_message) == ("VENDOR_INACTIVE", "inactive")
    [resumed] = _deliveries()
    with TestCase.captureOnCommitCallbacks(execute=True):
        run_deliver(*resumed)
    run.refresh_from_db()
    assert run.state == "rolled_back"
    assert ledger(run) == [("po", "rolled_back", "VENDOR_INACTIVE"), ("note", "skipped", None)]


def _drain_around(monkeypatch, owner: Any, name: str, *, before: bool) -> None:
    """The source's verdict lands just before, or just after, ``owner.name`` runs."""
    original = getattr(owner, name)

    def landing(*args: Any, **kwargs: Any) -> Any:
        if before:
            outbound_drain(record_type="purchaseOrder")
        answer = original(*args, **kwargs)
        if not before:
            outbound_drain(record_type="purchaseOrder")
        return answer

    monkeypatch.setattr(owner, name, landing)


def _woken_once_and_committed(run: ProcessRun) -> None:
    woken = _deliveries()
    assert len(woken) == 1  # one wake-up, whichever look came second found it taken
    parked = ProcessRun.objects.get(pk=run.pk)
    assert (parked.pending_reason, parked.wake_at, parked.delivery) == (
        "awaitingSource",
        None,
        woken[0][1],
    )
    run_deliver(*woken[0])
    run.refresh_from_db()
    assert (run.state, run.writes, _deliveries()) == ("committed", 2, [])


@pytest.mark.parametrize("before", [True, False], ids=["before-walk-end", "after-walk-end"])
@pytest.mark.django_db(transaction=True)
def test_a_verdict_landing_as_the_step_commits_wakes_the_run_exactly_once(
    admin_user, alice, monkeypatch, before
):
    """The step's own statement parks the run with its write: a verdict landing once it has
    committed (the walk not yet ended, or ended) finds the run parked and wakes it; the
    delivery does not look again."""
    deploy(PROCESS, by=admin_user)
    run = invoke("acme:await-one", {}, alice)
    [first] = _deliveries()
    _drain_around(monkeypatch, parking.Parking, "wait_source", before=before)
    run_deliver(*first)
    monkeypatch.undo()
    _woken_once_and_committed(run)


@pytest.mark.parametrize("before_park", [True, False], ids=["before-park", "after-park"])
@pytest.mark.django_db(transaction=True)
def test_a_verdict_landing_while_a_later_delivery_parks_again_wakes_it_exactly_once(
    admin_user, alice, monkeypatch, before_park
):
    """A delivery that finds the step recorded and its verdict pending parks the run by a
    statement of its own: a verdict landing just before that park (its wake-up finds the run
    still running) or just after (before the delivery's own look) wakes it once."""
    deploy(PROCESS, by=admin_user)
    run = invoke("acme:await-one", {}, alice)
    [first] = _deliveries()
    run_deliver(*first)  # parked by the step's statement
    run_redeliver(run.pk)  # an extra delivery (a lost lease's, say) before any verdict
    [again] = _deliveries()
    _drain_around(monkeypatch, parking, "run_wait", before=before_park)
    run_deliver(*again)
    monkeypatch.undo()
    _woken_once_and_committed(run)


@pytest.mark.django_db
def test_the_sweeper_sends_a_lost_wake_up_again_from_the_folded_verdict(admin_user, alice):
    deploy(PROCESS, by=admin_user)
    with TestCase.captureOnCommitCallbacks(execute=True):
        run = invoke("acme:await-one", {}, alice)
    [first] = _deliveries()
    run_deliver(*first)
    assert waits_sweep() == 0  # parked, no verdict: not due
    with TestCase.captureOnCommitCallbacks(execute=True):
        outbound_drain(record_type="purchaseOrder")
    assert len(_deliveries()) == 1  # the wake-up, lost here (taken and never performed)

    assert waits_sweep() == 0  # sent less than a lease ago: it may still be waiting for a worker
    later = timezone.now() + timedelta(seconds=lease_seconds() + 1)
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert waits_sweep(later) == 1
    [again] = _deliveries()
    with TestCase.captureOnCommitCallbacks(execute=True):
        run_deliver(*again)
    run.refresh_from_db()
    assert (run.state, run.writes) == ("committed", 2)
