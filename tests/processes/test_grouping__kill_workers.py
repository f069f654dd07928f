"""A real worker SIGKILLed in the middle of a run's writes, for each write kind (issue 21): a chain
of creates, of updates, of deletes, of creates and deletes of a connected type's records (each
waiting on the source's verdict), and a migration's create-and-stamp batches. A fresh cluster
finishes the run; every step's write lands exactly once — no duplicate record, no lost write, one
ledger row and one trail row per step — and the run commits.

The steps busy-wait a little in their functions, so the run takes a second or more and a kill
lands while steps are built but not yet written (today creates ride in groups on PostgreSQL and a
migration writes batches of rows; what else is grouped may change, and these must still hold).
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable

import pytest

from guardrails.settings import setting_set
from processes.invoke import run_invoke
from processes.models import ProcessRun, ProcessRunStep
from records.boundary import record_create
from records.models import Record, WriteTrail
from records.trail import Actor
from tests.processes.engine_support import deploy
from tests.processes.test_engine__migration import _items
from tests.processes.writes_support import assert_writes_counted
from tests.workers import QCluster, sweeping_until, wait_until

pytestmark = [pytest.mark.workers, pytest.mark.django_db(transaction=True)]

STEPS = 48
KILL_AT = 12  # ledger rows (or records) seen before the kill
FAST_LEASE = {
    "TURBOBASE_RUN_LEASE_S": "3",
    "TURBOBASE_TASK_TIMEOUT": "20",
    "TURBOBASE_TASK_RETRY": "8",
}
BUSY = "const until = Date.now() + 12; while (Date.now() < until) { /* a kill lands mid-run */ }"
TERMINAL = ("committed", "failed", "rolled_back", "cancelled")


def _chain(process_id: str, step: Callable[[int], str]) -> str:
    steps = ",\n    ".join(step(n) for n in range(STEPS))
    return (
        "import { defineProcess } from '@turbobase/extensions';\n"
        "export default defineProcess({\n"
        f"  id: '{process_id}',\n"
        "  input: { type: 'object' },\n"
        f"  steps: [\n    {steps}\n  ],\n"
        "});\n"
    )


def _create(n: int) -> str:
    return (
        f"{{ id: 's{n}', recordType: 'legacy_customer', build: (ctx) => {{ {BUSY} "
        f"return {{ parent: {{ n: {n}, run: ctx.runId }} }}; }} }}"
    )


def _update(n: int) -> str:
    return (
        f"{{ id: 's{n}', recordType: 'legacy_customer', "
        f"update: {{ pgRowId: (ctx) => ctx.input.ids[{n}] }}, "
        f"build: (ctx) => {{ {BUSY} return {{ parent: {{ n: {n}, tag: 'updated' }} }}; }} }}"
    )


def _delete(n: int) -> str:
    return (
        f"{{ id: 's{n}', recordType: 'legacy_customer', "
        f"delete: {{ pgRowId: (ctx) => {{ {BUSY} return ctx.input.ids[{n}]; }} }} }}"
    )


MIGRATION = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:kill-migrate',
  input: { type: 'object' },
  eachRow: {
    outstanding: () =>
      'migration_item?select=pg_row_id,legacy_id,company_name&status=eq.pending&order=legacy_id',
    key: 'legacy_id',
  },
  steps: [
    { id: 'create', recordType: 'legacy_customer', build: (ctx) => { BUSY
        return { parent: { legacy_id: ctx.row.legacy_id, name: ctx.row.company_name } }; } },
    { id: 'stamp', recordType: 'migration_item', update: { pgRowId: (ctx) => ctx.row.pg_row_id },
      build: (ctx) => ({ parent: { status: 'sent', target_pg_row_id: ctx.steps.create.pgRowId } }) },
  ],
});
""".replace("BUSY", BUSY)


def _ledger_rows(run_id) -> int:
    return ProcessRunStep.objects.filter(run_id=run_id).count()


def _killed_mid_run(run_id, progress: Callable[[], int], tmp_path) -> int:
    """Start a cluster, SIGKILL it once ``progress`` reaches KILL_AT, start a fresh one and let it
    finish the run; answers the ledger rows the killed cluster had committed."""
    # One worker a lane: enough to be killed mid-run, and the quickest cluster to start.
    cluster = QCluster(workers=1, log_path=tmp_path / "q.log", extra_env=FAST_LEASE)
    started = time.monotonic()
    cluster.start(wait=False)  # not the lanes' round trip: the run may be done by its end
    wait_until(lambda: progress() >= KILL_AT, timeout=180, interval=0.01, message="mid-run")
    # Not always just after a commit (where the poll sees it): anywhere in the next few steps.
    time.sleep(random.uniform(0, 0.15))
    cluster.kill()
    killed = time.monotonic()
    at_kill = _ledger_rows(run_id)
    assert ProcessRun.objects.get(pk=run_id).state not in TERMINAL, "the kill came too late"
    assert_writes_counted(run_id)  # what the dead worker left: the next claim's count
    cluster.start(wait=False)  # what tells that it is up: the run ending
    try:
        sweeping_until(
            lambda: ProcessRun.objects.filter(pk=run_id, state__in=TERMINAL).exists(),
            timeout=180,
            message="the run ended",
        )
    finally:
        cluster.stop()
    assert_writes_counted(run_id)
    print(
        f"\nkilled {killed - started:.1f}s after the start at {at_kill} ledger rows; a fresh"
        f" cluster ended the run {time.monotonic() - killed:.1f}s after the kill"
    )
    return at_kill


def _assert_chain_ledger(run: ProcessRun, action: str | Callable[[int], str]) -> list:
    """The run committed with one confirmed ledger row per step, in order, each naming a
    different record and none left awaiting a verdict (``action``: each step's, or one for all);
    answers the records, in step order."""
    actions = action if callable(action) else lambda _n: action
    run.refresh_from_db()
    assert (run.state, run.outstanding, run.reason) == ("committed", 0, None)
    rows = list(
        run.ledger.order_by("sequence").values_list(
            "sequence", "step_id", "action", "disposition", "pg_row_id", "awaiting_verdict"
        )
    )
    assert [row[:4] for row in rows] == [
        (n + 1, f"s{n}", actions(n), "confirmed") for n in range(STEPS)
    ]
    assert len({row[4] for row in rows}) == STEPS
    assert not any(row[5] for row in rows)  # every verdict came and was taken
    return [row[4] for row in rows]


def _assert_trail_once(run: ProcessRun, action: str, pks: list) -> None:
    trail = list(
        WriteTrail.reads.filter(process_run_id=str(run.pk))
        .order_by("id")
        .values_list("action", "outcome", "process_step", "pg_row_id")
    )
    assert trail == [(action, "allowed", f"s{n}", pk) for n, pk in enumerate(pks)]


def _seeds(alice) -> list[Record]:
    actor = Actor(alice)
    return [
        record_create(
            actor=actor, record_type="legacy_customer", parent={"n": n, "tag": "seed"}
        ).record
        for n in range(STEPS)
    ]


def test_a_kill_among_creates_leaves_each_record_once(admin_user, alice, tmp_path):
    deploy(_chain("t:kill-creates", _create), by=admin_user)
    run = run_invoke(process_id="t:kill-creates", body={}, user=alice)
    at_kill = _killed_mid_run(run.pk, lambda: _ledger_rows(run.pk), tmp_path)
    assert KILL_AT <= at_kill < STEPS
    pks = _assert_chain_ledger(run, "create")
    records = Record.reads.filter(record_type="legacy_customer")
    assert records.count() == STEPS  # no duplicate
    by_pk = {r.pk: r.fields for r in records}
    assert [by_pk[pk] for pk in pks] == [{"n": n, "run": str(run.pk)} for n in range(STEPS)]
    _assert_trail_once(run, "create", pks)
    assert run.writes == STEPS


def test_a_kill_among_updates_applies_each_update_once(admin_user, alice, tmp_path):
    seeds = _seeds(alice)
    deploy(_chain("t:kill-updates", _update), by=admin_user)
    run = run_invoke(
        process_id="t:kill-updates", body={"ids": [str(r.pk) for r in seeds]}, user=alice
    )
    at_kill = _killed_mid_run(run.pk, lambda: _ledger_rows(run.pk), tmp_path)
    assert KILL_AT <= at_kill < STEPS
    pks = _assert_chain_ledger(run, "update")
    assert pks == [r.pk for r in seeds]
    after = {r.pk: r for r in Record.reads.filter(record_type="legacy_customer")}
    assert len(after) == STEPS
    # Applied once: one version up from the seed's (an update applied twice is two).
    assert [(after[r.pk].fields, after[r.pk].sync_version) for r in seeds] == [
        ({"n": n, "tag": "updated"}, r.sync_version + 1) for n, r in enumerate(seeds)
    ]
    _assert_trail_once(run, "update", pks)
    assert run.writes == STEPS


def test_a_kill_among_deletes_deletes_each_record_once(admin_user, alice, tmp_path):
    for key in ("guardrails.max_deletes_per_min", "guardrails.max_deletes_per_hour"):
        setting_set(key, 10 * STEPS)  # the caps are not what this is about
    seeds = _seeds(alice)
    deploy(_chain("t:kill-deletes", _delete), by=admin_user)
    run = run_invoke(
        process_id="t:kill-deletes", body={"ids": [str(r.pk) for r in seeds]}, user=alice
    )
    at_kill = _killed_mid_run(run.pk, lambda: _ledger_rows(run.pk), tmp_path)
    assert KILL_AT <= at_kill < STEPS
    pks = _assert_chain_ledger(run, "delete")
    assert pks == [r.pk for r in seeds]
    # An unconnected record's delete removes its row: a delete lost would leave one behind, one
    # performed twice would fail its step (RECORD_NOT_FOUND) in the ledger above.
    assert not Record.reads.filter(record_type="legacy_customer").exists()
    _assert_trail_once(run, "delete", pks)
    assert run.writes == STEPS


def _create_or_delete(n: int) -> str:
    """Two creates, then a delete of a connected record (customer): each delete ends a group of
    the creates before it and parks the run on the source's verdict."""
    if n % 3 < 2:
        return _create(n)
    return (
        f"{{ id: 's{n}', recordType: 'customer', "
        f"delete: {{ pgRowId: (ctx) => {{ {BUSY} return ctx.input.ids[{n // 3}]; }} }} }}"
    )


def test_a_kill_among_connected_deletes_deletes_each_record_once(admin_user, alice, tmp_path):
    from guardrails.models import WindowEvent
    from guardrails.rules import rule_set
    from records.models import RecordWriteState
    from tests.processes.engine_support import pump

    actor = Actor(alice)
    customers = [
        record_create(actor=actor, record_type="customer", parent={"company_name": f"C{n}"}).record
        for n in range(STEPS // 3)
    ]
    pump()  # they reach the source and come back synced
    rule_set(record_type="customer", action="delete", decision="allow")  # not held
    deploy(_chain("t:kill-connected", _create_or_delete), by=admin_user)
    run = run_invoke(
        process_id="t:kill-connected", body={"ids": [str(r.pk) for r in customers]}, user=alice
    )
    at_kill = _killed_mid_run(run.pk, lambda: _ledger_rows(run.pk), tmp_path)
    assert KILL_AT <= at_kill < STEPS
    pks = _assert_chain_ledger(run, lambda n: "create" if n % 3 < 2 else "delete")
    assert pks[2::3] == [r.pk for r in customers]
    # Each delete queued once (one outbound delete a record), confirmed, charged once.
    deletes = RecordWriteState.reads.filter(operation="delete")
    assert sorted(deletes.values_list("record_id", flat=True)) == sorted(r.pk for r in customers)
    assert set(deletes.values_list("status", flat=True)) == {"confirmed"}
    assert WindowEvent.objects.filter(kind="delete").count() == len(customers)
    states = set(Record.reads.filter(record_type="customer").values_list("sync_state", flat=True))
    assert states == {"deleted"}
    assert Record.reads.filter(record_type="legacy_customer").count() == STEPS - len(customers)
    trail = WriteTrail.reads.filter(process_run_id=str(run.pk)).order_by("id")
    assert [t[:2] for t in trail.values_list("process_step", "outcome")] == [
        (f"s{n}", "allowed") for n in range(STEPS)
    ]
    assert run.writes == STEPS


def test_a_kill_among_migration_batches_creates_and_stamps_each_row_once(
    admin_user, alice, tmp_path
):
    setting_set("processes.slice_batch_rows", 6)
    items = _items(alice, STEPS)
    deploy(MIGRATION, by=admin_user)
    run = run_invoke(process_id="t:kill-migrate", body={}, user=alice)

    def made() -> int:
        return Record.reads.filter(record_type="legacy_customer").count()

    _killed_mid_run(run.pk, made, tmp_path)
    run.refresh_from_db()
    assert (run.state, run.outstanding, run.reason) == ("committed", 0, None)
    customers = {r.pk: r.fields for r in Record.reads.filter(record_type="legacy_customer")}
    assert sorted(f["legacy_id"] for f in customers.values()) == [
        f"L{n:05d}" for n in range(STEPS)
    ]  # each row's record once: no duplicate, none lost
    stamped = {
        r.fields["legacy_id"]: r.fields for r in Record.reads.filter(pk__in=[i.pk for i in items])
    }
    assert len(stamped) == STEPS
    for legacy_id, fields in stamped.items():
        assert fields["status"] == "sent"
        assert customers[uuid.UUID(fields["target_pg_row_id"])]["legacy_id"] == legacy_id
    creates = run.ledger.filter(step_id="create", disposition="confirmed")
    stamps = run.ledger.filter(step_id="stamp", disposition="confirmed")
    assert sorted(creates.values_list("row_key", flat=True)) == sorted(stamped)
    assert sorted(stamps.values_list("row_key", flat=True)) == sorted(stamped)
    assert {pk for pk in creates.values_list("pg_row_id", flat=True)} == set(customers)
    trail = WriteTrail.reads.filter(process_run_id=str(run.pk))
    assert trail.filter(action="create", outcome="allowed").count() == STEPS
    assert trail.filter(action="update", outcome="allowed").count() == STEPS
    assert not trail.exclude(outcome="allowed").exists()
