"""Create steps that ride (``processes.engine.grouping``): consecutive creates of a delivery are
checked and built one by one, then the lease, every record, its trail row and its step's ledger
row commit together in one autocommitted statement (``records.step_writes.group_commit``), or none
of them does — on PostgreSQL, outside any transaction, as a lane worker runs it. SQLite runs the
same steps in a transaction each: every test here but the statement counts holds on both."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from guardrails.settings import setting_set
from processes.engine import grouping as rides
from processes.engine.claim import run_claim
from processes.engine.lease import LeaseLost
from processes.engine.runner import ChainRunner, run_deliver
from processes.models import ProcessRun
from records.boundary import record_create
from records.models import Record, WriteTrail
from records.trail import Actor
from tests.processes.engine_support import deploy, invoke

pytestmark = pytest.mark.django_db(transaction=True)

CHAIN = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:ride',
  input: { type: 'object' },
  steps: [
    { id: 'a', recordType: 'legacy_customer', build: (ctx) => ({ parent: { n: 1, run: 'a' } }) },
    { id: 'b', recordType: 'legacy_customer',
      build: (ctx) => ({ parent: { n: 2, run: ctx.steps.a.pgRowId } }) },
    { id: 'c', recordType: 'legacy_customer',
      build: (ctx) => ({ parent: { n: 3, run: ctx.steps.b.pgRowId } }) },
  ],
});
"""

REFUSED = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:ride-refused',
  input: { type: 'object' },
  steps: [
    { id: 'a', recordType: 'legacy_customer', build: (ctx) => ({ parent: { n: 1 } }) },
    { id: 'item', recordType: 'migration_item', build: (ctx) => ({ parent: { note: 'no legacy id' } }) },
  ],
});
"""


@pytest.fixture
def run(admin_user, alice) -> ProcessRun:
    deploy(CHAIN, by=admin_user)
    return invoke("t:ride", {}, alice)


def _ledger(run: ProcessRun) -> list[tuple]:
    return list(
        run.ledger.order_by("sequence").values_list(
            "sequence", "step_id", "disposition", "counts_write", "created_record", "pg_row_id"
        )
    )


def _group_statements(queries: CaptureQueriesContext) -> int:
    """How many ride groups' statements ran (one per group on PostgreSQL, none on SQLite)."""
    return sum(1 for q in queries.captured_queries if q["sql"].startswith("WITH gate AS"))


def test_consecutive_create_steps_are_one_statement_holding_records_trails_and_ledger(run):
    with CaptureQueriesContext(connection) as queries:
        run_deliver(str(run.pk))
    run.refresh_from_db()
    assert (run.state, run.writes) == ("committed", 3)
    ledger = _ledger(run)
    assert [row[:5] for row in ledger] == [
        (1, "a", "confirmed", True, True),
        (2, "b", "confirmed", True, True),
        (3, "c", "confirmed", True, True),
    ]
    records = {r.pk: r for r in Record.reads.filter(pk__in=[row[5] for row in ledger])}
    a, b, c = (records[row[5]] for row in ledger)
    # Each build saw the step before it (its id chosen before the write; the builds ran ahead).
    assert (a.fields, b.fields["run"], c.fields["run"]) == (
        {"n": 1, "run": "a"},
        str(a.pk),
        str(b.pk),
    )
    trail = WriteTrail.objects.filter(process_run_id=str(run.pk)).order_by("id")
    assert list(trail.values_list("process_step", "outcome", "pg_row_id")) == [
        ("a", "allowed", a.pk),
        ("b", "allowed", b.pk),
        ("c", "allowed", c.pk),
    ]
    statements = [q["sql"] for q in queries.captured_queries]
    assert not [sql for sql in statements if "SAVEPOINT" in sql]
    riding = [sql for sql in statements if sql.startswith("WITH gate AS")]
    alone = [sql for sql in statements if sql.startswith('INSERT INTO "record"')]
    if connection.vendor == "postgresql":
        assert (len(riding), len(alone)) == (1, 0)
        assert not [sql for sql in statements if sql.startswith('INSERT INTO "process_run_step"')]
    else:  # no data-modifying CTE: each write alone, in the step's transaction
        assert (len(riding), len(alone)) == (0, 3)


def test_a_key_already_used_answers_with_its_record_and_leaves_no_gap(run, alice):
    made = record_create(
        actor=Actor(alice),
        record_type="legacy_customer",
        parent={"n": 0, "run": "made before"},
        idempotency_key=f"run:{run.pk}:b",
    ).record
    run_deliver(str(run.pk))
    run.refresh_from_db()
    ledger = _ledger(run)
    assert [row[:5] for row in ledger] == [
        (1, "a", "confirmed", True, True),
        (2, "b", "confirmed", False, True),
        (3, "c", "confirmed", True, True),
    ]
    assert ledger[1][5] == made.pk
    assert (run.state, run.writes) == ("committed", 2)
    assert Record.reads.get(pk=made.pk).fields == {"n": 0, "run": "made before"}
    assert Record.reads.get(pk=ledger[2][5]).fields["run"] == str(made.pk)


def test_a_refused_create_writes_its_refusal_and_nothing_else(admin_user, alice):
    deploy(REFUSED, by=admin_user)
    run = invoke("t:ride-refused", {}, alice)
    run_deliver(str(run.pk))
    run.refresh_from_db()
    assert run.state == "failed"
    rows = list(
        run.ledger.order_by("sequence").values_list("step_id", "disposition", "refusal_code")
    )
    assert rows == [("a", "confirmed", None), ("item", "failed", "REQUIRED_FIELD_MISSING")]
    assert not Record.reads.filter(record_type="migration_item").exists()
    refused = WriteTrail.objects.get(process_run_id=str(run.pk), outcome="refused")
    assert (refused.process_step, refused.code) == ("item", "REQUIRED_FIELD_MISSING")
    assert run.writes == 1


def test_a_delivery_that_lost_its_lease_writes_nothing(run):
    first_run, first_lease = run_claim(str(run.pk), 1)
    ProcessRun.objects.filter(pk=run.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    second = run_claim(str(run.pk), 1)
    assert second is not None and second[1].token != first_lease.token
    with pytest.raises(LeaseLost):
        ChainRunner(first_run, first_lease).execute()
    assert (run.ledger.count(), Record.reads.count()) == (0, 0)
    assert not WriteTrail.objects.filter(process_run_id=str(run.pk)).exists()
    assert ProcessRun.objects.get(pk=run.pk).lease_owner == second[1].token


def test_a_group_holds_at_most_step_group_max_steps(run):
    setting_set("processes.step_group_max", 2)
    with CaptureQueriesContext(connection) as queries:
        run_deliver(str(run.pk))
    run.refresh_from_db()
    assert (run.state, run.writes) == ("committed", 3)
    assert [row[:2] for row in _ledger(run)] == [(1, "a"), (2, "b"), (3, "c")]
    assert _group_statements(queries) == (
        2 if connection.vendor == "postgresql" else 0
    )  # a+b, then c


UPDATED_BETWEEN = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:ride-update',
  input: { type: 'object' },
  steps: [
    { id: 'a', recordType: 'legacy_customer', build: (ctx) => ({ parent: { n: 1 } }) },
    { id: 'u', recordType: 'legacy_customer', update: { pgRowId: (ctx) => ctx.steps.a.pgRowId },
      build: (ctx) => ({ parent: { n: 2 } }) },
    { id: 'c', recordType: 'legacy_customer', build: (ctx) => ({ parent: { n: 3 } }) },
  ],
});
"""


def test_an_update_of_a_record_the_group_creates_rides_with_it(admin_user, alice):
    deploy(UPDATED_BETWEEN, by=admin_user)
    run = invoke("t:ride-update", {}, alice)
    with CaptureQueriesContext(connection) as queries:
        run_deliver(str(run.pk))
    run.refresh_from_db()
    assert run.state == "committed"
    ledger = _ledger(run)
    assert [row[1:3] for row in ledger] == [
        ("a", "confirmed"),
        ("u", "confirmed"),
        ("c", "confirmed"),
    ]
    assert ledger[1][5] == ledger[0][5]  # the update changed the record a created
    record = Record.reads.get(pk=ledger[0][5])
    assert (record.fields, record.sync_version) == ({"n": 2}, 2)
    # a, u and c in one statement: u is folded into a's create (records.step_folds), unread
    assert _group_statements(queries) == (1 if connection.vendor == "postgresql" else 0)
    if connection.vendor == "postgresql":
        assert not [q for q in queries.captured_queries if q["sql"].startswith('SELECT "record"')]


def test_a_cancel_read_by_the_group_statement_writes_its_first_step_only(run):
    ProcessRun.objects.filter(pk=run.pk).update(slices=1)  # nothing to hold before step a
    claimed, lease = run_claim(str(run.pk), 1)
    ProcessRun.objects.filter(pk=run.pk).update(cancel_requested=True)  # after the claim read
    ChainRunner(claimed, lease).execute()
    run.refresh_from_db()
    assert [row[1] for row in _ledger(run)] == ["a"]
    assert (run.state, run.writes, run.outstanding) == ("cancelled", 1, 2)
    assert Record.reads.count() == 1  # b and c were built, never written
    assert WriteTrail.objects.filter(process_run_id=str(run.pk)).count() == 1


def test_a_group_older_than_ride_group_ms_is_written_as_the_next_step_joins(run, monkeypatch):
    monkeypatch.setattr(rides, "RIDE_GROUP_MS", 0)
    with CaptureQueriesContext(connection) as queries:
        run_deliver(str(run.pk))
    run.refresh_from_db()
    assert (run.state, run.writes) == ("committed", 3)
    assert _group_statements(queries) == (
        3 if connection.vendor == "postgresql" else 0
    )  # each step at once


READS = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:ride-read',
  input: { type: 'object' },
  steps: [
    { id: 'a', recordType: 'legacy_customer', build: (ctx) => ({ parent: { name: 'first' } }) },
    { id: 'b', recordType: 'legacy_customer', build: async (ctx) => {
        const seen = await ctx.query(`legacy_customer?select=name&pg_row_id=eq.${ctx.steps.a.pgRowId}`);
        return { parent: { name: 'second', custom: { seen: seen.map((r) => r.name) } } };
    } },
  ],
});
"""


def test_a_ctx_query_reads_after_the_group_before_it_is_written(admin_user, alice):
    deploy(READS, by=admin_user)
    run = invoke("t:ride-read", {}, alice)
    with CaptureQueriesContext(connection) as queries:
        run_deliver(str(run.pk))
    run.refresh_from_db()
    assert (run.state, run.writes) == ("committed", 2)
    b = Record.reads.get(pk=run.ledger.get(step_id="b").pg_row_id)
    assert b.fields == {"name": "second", "custom": {"seen": ["first"]}}
    assert _group_statements(queries) == (
        2 if connection.vendor == "postgresql" else 0
    )  # a (before the read), b


def test_a_key_found_taken_while_a_read_writes_the_group_walks_again_from_that_step(
    admin_user, alice
):
    deploy(READS, by=admin_user)
    run = invoke("t:ride-read", {}, alice)
    made = record_create(
        actor=Actor(alice),
        record_type="legacy_customer",
        parent={"name": "made before"},
        idempotency_key=f"run:{run.pk}:a",
    ).record
    run_deliver(str(run.pk))  # b's read writes the group (a): a's key is taken there
    run.refresh_from_db()
    assert (run.state, run.writes) == ("committed", 1)
    ledger = _ledger(run)
    assert [row[:5] for row in ledger] == [
        (1, "a", "confirmed", False, True),
        (2, "b", "confirmed", True, True),
    ]
    assert ledger[0][5] == made.pk
    b = Record.reads.get(pk=ledger[1][5])
    assert b.fields == {"name": "second", "custom": {"seen": ["made before"]}}
    assert Record.reads.count() == 2


SPECULATED = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:ride-guess',
  input: { type: 'object' },
  steps: [
    { id: 'a', recordType: 'legacy_customer', build: (ctx) => ({ parent: { n: 1 } }) },
    { id: 'b', recordType: 'legacy_customer', when: (ctx) => false,
      build: (ctx) => ({ parent: { n: 2 } }) },
    { id: 'c', recordType: 'legacy_customer',
      build: (ctx) => ({ parent: { n: 3,
        custom: { b: ctx.steps.b.disposition, id: ctx.steps.b.pgRowId } } }) },
  ],
});
"""


def test_a_build_sent_ahead_on_a_guess_that_failed_is_made_again_with_what_happened(
    admin_user, alice
):
    # c's build goes ahead while a is made, guessing that b will ride; b declines instead.
    deploy(SPECULATED, by=admin_user)
    run = invoke("t:ride-guess", {}, alice)
    run_deliver(str(run.pk))
    run.refresh_from_db()
    assert (run.state, run.writes) == ("committed", 2)
    assert [row[1:3] for row in _ledger(run)] == [
        ("a", "confirmed"),
        ("b", "skipped"),
        ("c", "confirmed"),
    ]
    c = Record.reads.get(pk=run.ledger.get(step_id="c").pg_row_id)
    assert c.fields == {"n": 3, "custom": {"b": "skipped", "id": None}}


CONNECTED = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:ride-connected',
  input: { type: 'object' },
  steps: [
    { id: 'a', recordType: 'customer', build: (ctx) => ({ parent: { company_name: 'A' } }) },
    { id: 'b', recordType: 'customer', build: (ctx) => ({ parent: { company_name: 'B' } }) },
    { id: 'c', recordType: 'legacy_customer',
      build: (ctx) => ({ parent: { n: 3, run: ctx.steps.b.pgRowId } }) },
  ],
});
"""


def test_creates_of_a_connected_type_ride_with_their_outbound_writes(admin_user, alice):
    from records.models import RecordWriteState
    from tests.processes.engine_support import pump

    deploy(CONNECTED, by=admin_user)
    run = invoke("t:ride-connected", {}, alice)
    with CaptureQueriesContext(connection) as queries:
        run_deliver(str(run.pk))
    run.refresh_from_db()
    assert (run.state, run.writes) == ("committed", 3)
    if connection.vendor == "postgresql":
        assert _group_statements(queries) == 1
    customers = {r.fields["company_name"]: r for r in Record.reads.filter(record_type="customer")}
    states = list(
        RecordWriteState.reads.order_by("id").values_list(
            "record_id", "operation", "status", "payload"
        )
    )
    assert states == [
        (customers["A"].pk, "create", "pending", {"parent": {"company_name": "A"}, "lines": []}),
        (customers["B"].pk, "create", "pending", {"parent": {"company_name": "B"}, "lines": []}),
    ]
    assert {r.sync_state for r in customers.values()} == {"pending"}
    pump()  # the drain sends them, in order, once
    assert list(RecordWriteState.reads.values_list("status", flat=True).distinct()) == ["confirmed"]
    assert all(r.external_id for r in Record.reads.filter(record_type="customer"))


def test_creates_of_a_hooked_type_ride_and_a_hook_refusal_stops_the_run_there(admin_user, alice):
    from records.errors import HookRejection
    from records.hooks import hook_register

    seen = []

    def hook(ctx):
        seen.append(ctx.record["parent"]["n"])
        if ctx.record["parent"]["n"] == 3:
            raise HookRejection("three is refused", code="NO_THREE", field="parent.n")

    deploy(CHAIN, by=admin_user)
    run = invoke("t:ride", {}, alice)
    unregister = hook_register(slot="before_save", record_type="legacy_customer", hook=hook)
    try:
        with CaptureQueriesContext(connection) as queries:
            run_deliver(str(run.pk))
    finally:
        unregister()
    run.refresh_from_db()
    assert run.state == "failed"
    assert seen == [1, 2, 3]
    assert [row[1:3] for row in _ledger(run)] == [
        ("a", "confirmed"),
        ("b", "confirmed"),
        ("c", "failed"),
    ]
    assert sorted(r.fields["n"] for r in Record.reads.filter(record_type="legacy_customer")) == [
        1,
        2,
    ]
    refused = WriteTrail.reads.get(outcome="refused")
    assert (refused.code, refused.process_step) == ("NO_THREE", "c")
    if connection.vendor == "postgresql":
        assert _group_statements(queries) == 1  # a and b rode together
