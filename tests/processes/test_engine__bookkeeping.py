"""Run bookkeeping: stale deliveries, the lease a step's transaction proves, run_end's columns,
and the watch that sends a lost delivery again (its tick, in this process)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import F
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_q.models import OrmQ
from django_q.tasks import async_task

from processes.engine.claim import run_claim
from processes.engine.ending import run_end
from processes.engine.lease import LeaseLost
from processes.engine.ledger import sequence_next
from processes.engine.redelivery import redelivery_tick, runs_lost
from processes.engine.runner import ChainRunner, run_deliver
from processes.errors import RunNotFound
from processes.models import ProcessRun
from processes.steering import run_get
from records.models import Record
from tests.processes.engine_support import deploy, invoke

pytestmark = pytest.mark.django_db

TWO_STEPS = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:two',
  input: { type: 'object' },
  steps: [
    { id: 'a', recordType: 'legacy_customer', build: (ctx) => ({ parent: { run: ctx.runId, step: 1 } }) },
    { id: 'b', recordType: 'legacy_customer', build: (ctx) => ({ parent: { run: ctx.runId, step: 2 } }) },
  ],
});
"""


@pytest.fixture
def run(admin_user, alice) -> ProcessRun:
    deploy(TWO_STEPS, by=admin_user)
    return invoke("t:two", {}, alice)


def _row(run: ProcessRun) -> dict:
    return ProcessRun.objects.filter(pk=run.pk).values().get()


def test_a_stale_delivery_does_nothing_and_the_current_one_runs(run):
    ProcessRun.objects.filter(pk=run.pk).update(
        delivery=F("delivery") + 1
    )  # a later enqueue (e.g. a wake-up)
    before = _row(run)
    run_deliver(str(run.pk), 1)
    assert _row(run) == before
    assert (run.ledger.count(), Record.reads.count()) == (0, 0)
    run_deliver(str(run.pk), 2)
    run.refresh_from_db()
    assert (run.state, run.writes, run.lease_owner, run.lease_until) == ("committed", 2, "", None)
    assert list(run.ledger.order_by("sequence").values_list("step_id", flat=True)) == ["a", "b"]


def test_a_delivery_that_lost_its_lease_writes_nothing(run):
    first_run, first_lease = run_claim(str(run.pk), 1)
    ProcessRun.objects.filter(pk=run.pk).update(
        lease_until=timezone.now() - timedelta(seconds=1)
    )  # it froze
    second = run_claim(str(run.pk), 1)
    assert second is not None and second[1].token != first_lease.token
    before = _row(run)
    with pytest.raises(LeaseLost):
        ChainRunner(first_run, first_lease).execute()
    assert _row(run) == before  # still the second delivery's, untouched
    assert (run.ledger.count(), Record.reads.count()) == (0, 0)


def test_a_claim_answers_the_run_its_invoker_and_the_ledger_position(run, alice):
    run_deliver(str(run.pk), 1)  # two steps written; then it is left as a dead worker leaves it
    ProcessRun.objects.filter(pk=run.pk).update(
        state="running", lease_owner="dead", lease_until=timezone.now() - timedelta(seconds=1)
    )
    with CaptureQueriesContext(connection) as queries:
        claimed, lease = run_claim(str(run.pk), 1)
        invoker = claimed.invoked_by  # loaded by the claim: no query of its own
    # On PostgreSQL the UPDATE answers the run and its invoker; then one read of the ledger.
    assert len(queries) == (2 if connection.vendor == "postgresql" else 3)
    stored = ProcessRun.objects.get(pk=run.pk)
    names = [f.attname for f in ProcessRun._meta.concrete_fields]
    assert {n: getattr(claimed, n) for n in names} == {n: getattr(stored, n) for n in names}
    assert (stored.state, stored.lease_owner, lease.token) == ("running", lease.token, lease.token)
    assert (invoker.pk, invoker.username, invoker.password) == (alice.pk, "alice", alice.password)
    assert (claimed.writes, sequence_next(claimed)) == (2, 3)
    assert run_claim(str(run.pk), 1) is None  # its lease is live now
    assert run_claim("not-a-uuid") is None


def test_run_end_writes_only_its_columns(run):
    claimed_run, lease = run_claim(str(run.pk), 1)
    # Meanwhile a wake-up bumps the delivery (steering and wake-ups use F()).
    ProcessRun.objects.filter(pk=run.pk).update(delivery=F("delivery") + 1, input={"changed": True})
    run_end(claimed_run, "committed", lease=lease)
    row = _row(run)
    assert (row["state"], row["delivery"], row["input"], row["lease_owner"]) == (
        "committed",
        2,
        {"changed": True},
        "",
    )


def test_run_end_by_a_delivery_that_lost_its_lease_changes_nothing(run):
    claimed_run, lease = run_claim(str(run.pk), 1)
    ProcessRun.objects.filter(pk=run.pk).update(lease_owner="someone-else")
    before = _row(run)
    with pytest.raises(LeaseLost):
        run_end(claimed_run, "committed", lease=lease)
    assert _row(run) == before


def test_a_malformed_run_id_is_not_found_without_a_query_error(alice):
    for bad in ("not-a-uuid", "1234", "\x00", "ffffffff-ffff-ffff-ffff-fffffffffffff"):
        with pytest.raises(RunNotFound):
            run_get(user=alice, run_id=bad)


def _lane_tasks() -> list[str]:
    return [task.task["args"][0] for task in OrmQ.objects.filter(key="tb_async")]


def test_a_queued_run_not_claimed_within_the_lease_is_sent_again_once(run, settings):
    settings.PROCESS_RUN_LEASE_S = 5
    OrmQ.objects.all().delete()  # the broker lost the first task
    assert runs_lost(mode="async") == []  # sent just now: not lost yet
    ProcessRun.objects.filter(pk=run.pk).update(enqueued_at=timezone.now() - timedelta(seconds=6))
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert redelivery_tick(mode="async") == 1
        assert redelivery_tick(mode="async") == 0  # sent again just now: one task, not one per look
    assert _lane_tasks() == [str(run.pk)]
    assert _row(run)["delivery"] == 1  # the same delivery, sent again: not a stale one
    run_deliver(str(run.pk), 1)
    assert _row(run)["state"] == "committed"


def test_a_running_run_whose_lease_ran_out_is_sent_again_and_a_live_one_is_not(run, settings):
    settings.PROCESS_RUN_LEASE_S = 5
    OrmQ.objects.all().delete()
    run_claim(str(run.pk), 1)  # a worker took it …
    assert runs_lost(mode="async") == []  # … and holds a live lease
    now = timezone.now()  # … and died: sent 8 s ago, its last renewal's lease ran out 2 s ago
    ProcessRun.objects.filter(pk=run.pk).update(
        enqueued_at=now - timedelta(seconds=8), lease_until=now - timedelta(seconds=2)
    )
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert redelivery_tick(mode="async") == 1
        assert redelivery_tick(mode="async") == 0
    assert _lane_tasks() == [str(run.pk)]
    run_deliver(str(run.pk), 1)
    run.refresh_from_db()
    assert (run.state, run.writes) == ("committed", 2)
    assert run.ledger.count() == 2


def test_parked_and_ended_runs_are_left_to_their_wake_ups(run, settings):
    settings.PROCESS_RUN_LEASE_S = 5
    long_ago = timezone.now() - timedelta(seconds=60)
    ProcessRun.objects.filter(pk=run.pk).update(
        state="running", pending_reason="awaitingSource", lease_until=None, enqueued_at=long_ago
    )
    assert runs_lost(mode="async") == []
    ProcessRun.objects.filter(pk=run.pk).update(state="committed", pending_reason="")
    assert runs_lost(mode="async") == []


def test_a_backlog_still_waiting_in_the_broker_is_not_sent_again(admin_user, alice, settings):
    settings.PROCESS_RUN_LEASE_S = 5
    deploy(TWO_STEPS, by=admin_user)
    async_task(
        "sources.tasks.outbound_drain_task", "customer", cluster="tb_async"
    )  # not a delivery
    with TestCase.captureOnCommitCallbacks(execute=True):
        first, second = invoke("t:two", {}, alice), invoke("t:two", {}, alice)
    now = timezone.now()
    ProcessRun.objects.filter(pk=first.pk).update(enqueued_at=now - timedelta(seconds=20))
    ProcessRun.objects.filter(pk=second.pk).update(enqueued_at=now - timedelta(seconds=10))
    assert _lane_tasks() == ["customer", str(first.pk), str(second.pk)]
    assert runs_lost(mode="async") == []  # both still wait their turn in the broker
    first_task = next(task for task in OrmQ.objects.all() if task.task["args"][0] == str(first.pk))
    first_task.delete()  # taken by a cluster that was then killed
    assert [run_id for run_id, _, _ in runs_lost(mode="async")] == [first.pk]


def _chain_of_creates(process_id: str, steps: int) -> str:
    body = ",\n".join(
        f"    {{ id: 's{n}', recordType: 'legacy_customer', build: (ctx) => ({{ parent: {{ n: {n} }} }}) }}"
        for n in range(steps)
    )
    return (
        "import { defineProcess } from '@turbobase/extensions';\n"
        f"export default defineProcess({{\n  id: '{process_id}',\n  input: {{ type: 'object' }},\n"
        f"  steps: [\n{body}\n  ],\n}});\n"
    )


@pytest.mark.django_db(transaction=True)  # the step's transaction is the outermost, as in a worker
def test_a_create_step_is_one_short_transaction_and_the_stop_check_reads_nothing(admin_user, alice):
    """The promise behind the step bench's statement count: no SAVEPOINT, no look-up of the key
    before the INSERT, no SELECT of the run between steps (the cancel request comes back with the
    lease proof). On PostgreSQL the six steps ride (``engine.grouping``): one autocommitted
    statement — the lease proof, and each step's record, trail row and ledger row — with no
    BEGIN or COMMIT of its own, and no write between the steps; on SQLite one transaction of one
    statement per write."""
    deploy(_chain_of_creates("t:six", 6), by=admin_user)
    run = invoke("t:six", {}, alice)
    with CaptureQueriesContext(connection) as captured:
        run_deliver(str(run.pk))
    run.refresh_from_db()
    assert (run.state, run.writes, Record.reads.count()) == ("committed", 6, 6)
    sqls = [query["sql"] for query in captured.captured_queries]
    assert not [sql for sql in sqls if sql.startswith(("SAVEPOINT", "RELEASE", "ROLLBACK"))]
    assert not [sql for sql in sqls if sql.startswith('SELECT "record"')]
    run_reads = [sql for sql in sqls if sql.startswith("SELECT") and 'FROM "process_run" ' in sql]
    # The claim's read of the run it took: on PostgreSQL inside the claim's own statement.
    assert len(run_reads) == (0 if connection.vendor == "postgresql" else 1)
    steps = [n for n, sql in enumerate(sqls) if 'INSERT INTO "record"' in sql]
    if connection.vendor == "postgresql":
        assert len(steps) == 1
        (n,) = steps
        assert sqls[n].startswith('WITH gate AS (UPDATE "process_run"')
        assert sqls[n].count('INSERT INTO "process_run_step"') == 1
        # From the claim to the group's statement nothing is written: the walk's start (its
        # slice count) rides the group's lease proof, and no step wrote anything on its own.
        claim = next(i for i, sql in enumerate(sqls) if sql.startswith("WITH claimed AS (UPDATE"))
        between = [sql for sql in sqls[claim + 1 : n] if not sql.startswith("SELECT")]
        assert between == [], between
        assert '"slices" = ' in sqls[n]
        return
    assert len(steps) == 6
    # SQLite has no data-modifying CTE: each write alone, in the step's transaction.
    expected = [
        "BEGIN",  # BEGIN IMMEDIATE
        'INSERT INTO "record"',
        'INSERT INTO "write_trail"',
        'UPDATE "process_run"',
        'INSERT INTO "process_run_step"',
        "COMMIT",
    ]
    for n in steps[1:]:
        since = max(i for i in range(n) if sqls[i] == "COMMIT") + 1
        step = sqls[since : sqls.index("COMMIT", n) + 1]
        written = [sql for sql in step if not sql.startswith("SELECT")]
        assert len(written) == len(expected), written
        assert all(sql.startswith(start) for sql, start in zip(written, expected, strict=True)), (
            step
        )
