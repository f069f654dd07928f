"""A run of a single step: its delivery is the claim and the step's own statement, which also
ends the run (``engine.runner``'s last flush, ``engine.ending.run_end_riding``); the claim
answers what the delivery needs (the invoker's first group, the process's switch) and reads no
ledger for a run nobody claimed before; one thread renews every delivery's lease."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from kernel.metrics import RUNS_FINISHED
from processes.engine.claim import run_claim
from processes.engine.lease import LeaseLost
from processes.engine.runner import ChainRunner, run_deliver
from processes.models import Process, ProcessRun
from records.boundary import record_create
from records.models import Record
from records.policies import default_group
from records.trail import Actor
from tests.conftest import make_user
from tests.processes.engine_support import deploy, invoke, ledger

pytestmark = pytest.mark.django_db

ONE_STEP = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:one',
  input: { type: 'object' },
  steps: [
    { id: 'only', recordType: 'legacy_customer', build: (ctx) => ({ parent: { run: ctx.runId } }) },
  ],
});
"""

IS_PG = "postgresql"


@pytest.fixture
def one(admin_user) -> str:
    deploy(ONE_STEP, by=admin_user)
    return "t:one"


def _finished(process_id: str) -> float:
    return RUNS_FINISHED.labels(process=process_id, outcome="committed")._value.get()


@pytest.mark.django_db(transaction=True)  # the step's statement is the outermost, as in a worker
def test_a_one_step_delivery_is_the_claim_and_the_steps_statement_which_ends_the_run(one, alice):
    run_deliver(str(invoke(one, {}, alice).pk))  # a warm worker: the module and rules cached
    run = invoke(one, {}, alice)
    ProcessRun.objects.filter(pk=run.pk).update(worked_ms=5000)  # earlier deliveries' time
    counted = _finished(one)
    with CaptureQueriesContext(connection) as captured:
        delivered = run_deliver(str(run.pk))
    sqls = [query["sql"] for query in captured.captured_queries]
    stored = ProcessRun.objects.get(pk=run.pk)
    assert (stored.state, stored.pending_reason, stored.outstanding, stored.reason) == (
        "committed",
        "",
        0,
        None,
    )
    assert (stored.lease_owner, stored.lease_until, stored.writes, stored.slices) == (
        "",
        None,
        1,
        1,
    )
    assert stored.finished_at is not None and stored.worked_ms >= 5000
    # What the delivery answers is what it wrote (run_end mirrors; so does the riding end).
    names = [f.attname for f in ProcessRun._meta.concrete_fields]
    assert {n: getattr(delivered, n) for n in names} == {n: getattr(stored, n) for n in names}
    assert ledger(stored) == [("only", "confirmed", None)]
    assert Record.reads.filter(record_type="legacy_customer").count() == 2
    assert _finished(one) == counted + 1  # counted once
    if connection.vendor == IS_PG:
        # The claim (its WAL not waited for), then one statement: the lease proof with the run's
        # end, the record, its trail row and the ledger row. No BEGIN, no COMMIT, no reads.
        assert len(sqls) == 2, "\n".join(s[:150] for s in sqls)
        claim, step = sqls
        assert claim.startswith("WITH claimed AS (UPDATE") and "synchronous_commit" in claim
        assert step.startswith('WITH gate AS (UPDATE "process_run"')
        assert '"state" = ' in step and '"finished_at" = ' in step
        assert 'INSERT INTO "record"' in step and 'INSERT INTO "process_run_step"' in step
    else:
        # SQLite: the claim and its read of the run, the switch's and the group's reads, the
        # step's transaction (BEGIN, record, trail, lease proof, ledger, COMMIT) and the end's.
        assert len(sqls) <= 15, sqls


@pytest.mark.django_db(transaction=True)
def test_a_cancel_that_comes_during_the_only_step_lets_it_land_and_the_run_commits(one, alice):
    """As with steps committed alone: the step in flight lands, there is no step after it to stop
    before, and the end clears the request."""
    run = invoke(one, {}, alice)
    claimed, lease = run_claim(str(run.pk), 1)
    ProcessRun.objects.filter(pk=run.pk).update(cancel_requested=True)
    ChainRunner(claimed, lease).execute()
    stored = ProcessRun.objects.get(pk=run.pk)
    assert (stored.state, stored.cancel_requested, stored.lease_owner) == ("committed", False, "")
    assert ledger(stored) == [("only", "confirmed", None)]


@pytest.mark.django_db(transaction=True)
def test_a_one_step_delivery_that_lost_its_lease_writes_nothing_and_ends_nothing(one, alice):
    run = invoke(one, {}, alice)
    claimed, lease = run_claim(str(run.pk), 1)
    ProcessRun.objects.filter(pk=run.pk).update(lease_owner="someone-else")
    with pytest.raises(LeaseLost):
        ChainRunner(claimed, lease).execute()
    stored = ProcessRun.objects.get(pk=run.pk)
    assert (stored.state, stored.lease_owner, stored.finished_at) == (
        "running",
        "someone-else",
        None,
    )
    assert (stored.ledger.count(), Record.reads.count()) == (0, 0)


@pytest.mark.django_db(transaction=True)
def test_a_one_step_run_whose_key_was_taken_is_answered_by_that_record_and_commits(one, alice):
    """The step's statement writes nothing when its record's key is used (a dead delivery's
    write): the step is then made alone, answered with that record, and the run ends apart."""
    run = invoke(one, {}, alice)
    taken = record_create(
        actor=Actor(alice),
        record_type="legacy_customer",
        parent={"run": "made before"},
        idempotency_key=f"run:{run.pk}:only",
    ).record
    run_deliver(str(run.pk))
    stored = ProcessRun.objects.get(pk=run.pk)
    # The key's record answers the step: no write of this run's counts.
    assert (stored.state, stored.lease_owner, stored.writes) == ("committed", "", 0)
    assert [(row.pg_row_id, row.counts_write) for row in stored.ledger.all()] == [(taken.pk, False)]
    assert Record.reads.count() == 1


def test_a_fresh_runs_claim_reads_no_ledger_and_answers_the_group_and_the_switch(admin_user, one):
    carol = make_user("carol", groups=("b-team", "a-team"))
    run = invoke(one, {}, carol)
    with CaptureQueriesContext(connection) as queries:
        claimed, lease = run_claim(str(run.pk), 1)
        group = default_group(claimed.invoked_by)  # answered with the claim: no read of its own
    # SQLite: the UPDATE, the read of the run and its invoker, the group's read. Never the ledger.
    assert len(queries) == (1 if connection.vendor == IS_PG else 3)
    assert not [q for q in queries.captured_queries if '"process_run_step"' in q["sql"]]
    assert (claimed.writes, lease.cancel_seen) == (0, False)
    assert group == Group.objects.get(name="a-team")
    if connection.vendor == IS_PG:
        assert lease.switch_seen is True
    assert claimed.started_at is not None and claimed.state == "running"


def test_a_process_switched_off_before_the_claim_stops_the_run_with_no_step(one, alice):
    run = invoke(one, {}, alice)
    Process.objects.filter(pk=one).update(is_enabled=False)
    run_deliver(str(run.pk))
    stored = ProcessRun.objects.get(pk=run.pk)
    assert (stored.state, stored.outstanding) == ("committed", 1)
    assert stored.reason == f"stopped: an administrator switched {one} off"
    assert stored.ledger.count() == 0


@pytest.mark.django_db(transaction=True)  # the renewals' thread reads the committed claim
def test_one_thread_renews_a_live_delivery_and_stops_once_it_lets_go(one, alice, settings):
    settings.PROCESS_RUN_LEASE_S = 1
    run = invoke(one, {}, alice)
    _, lease = run_claim(str(run.pk), 1)
    claimed_until = ProcessRun.objects.get(pk=run.pk).lease_until
    lease.heartbeat_start()
    try:
        deadline = time.monotonic() + 30
        while ProcessRun.objects.get(pk=run.pk).lease_until == claimed_until:
            assert time.monotonic() < deadline, "the lease was never renewed"
            time.sleep(0.05)
    finally:
        lease.heartbeat_stop()
    assert lease.beat() is False  # let go: the thread renews it no more
    stored = ProcessRun.objects.get(pk=run.pk)
    assert stored.lease_owner == lease.token and stored.lease_until > timezone.now()
