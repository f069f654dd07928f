"""Update steps grouped (``processes.engine.grouping``): an update by ``pgRowId`` is checked, its
record read as its writer may see it and its ``before_save`` hooks run at once; it is written with
its neighbours — creates and updates, their trail rows and ledger rows, behind the lease proof — in
one statement, and only where its record is still at the version read. A record that moved in
between fails the whole statement (nothing written) and that step is made again alone, locked,
so no concurrent write is lost. SQLite runs each step in a transaction: all but the statement
counts hold on both."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from guardrails.settings import setting_set
from processes.engine import grouping
from processes.engine.runner import run_deliver
from processes.models import ProcessRun
from records.boundary import record_create, record_update
from records.hooks import hook_register
from records.models import Record, WriteTrail
from records.trail import Actor
from tests.processes.engine_support import deploy, invoke

pytestmark = pytest.mark.django_db(transaction=True)

# The seed's migrate shape in a chain: a create, then stamps of other records.
STAMPS = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:stamps',
  input: { type: 'object' },
  steps: [
    { id: 'new', recordType: 'legacy_customer', build: (ctx) => ({ parent: { n: 0 } }) },
    { id: 'sa', recordType: 'legacy_customer', update: { pgRowId: (ctx) => ctx.input.a },
      build: (ctx) => ({ parent: { note: ctx.steps.new.pgRowId } }) },
    { id: 'sb', recordType: 'legacy_customer', update: { pgRowId: (ctx) => ctx.input.b },
      build: (ctx) => ({ parent: { note: ctx.steps.sa.pgRowId } }) },
    { id: 'sc', recordType: 'legacy_customer', update: { pgRowId: (ctx) => ctx.input.c },
      build: (ctx) => ({ parent: { note: ctx.steps.sb.pgRowId } }) },
  ],
});
"""


def _legacy(alice, n: int) -> Record:
    return record_create(
        actor=Actor(user=alice), record_type="legacy_customer", parent={"n": n, "active": True}
    ).record


@pytest.fixture
def stamped(admin_user, alice, monkeypatch) -> tuple[ProcessRun, list[Record]]:
    # A loaded machine must not split the group by its age: the counts here are of its size.
    monkeypatch.setattr(grouping, "RIDE_GROUP_MS", 60_000)
    targets = [_legacy(alice, n) for n in (1, 2, 3)]
    deploy(STAMPS, by=admin_user)
    body = {"a": str(targets[0].pk), "b": str(targets[1].pk), "c": str(targets[2].pk)}
    return invoke("t:stamps", body, alice), targets


def _groups(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if q["sql"].startswith("WITH gate AS")]


def test_a_create_and_the_updates_after_it_are_one_statement(stamped):
    run, targets = stamped
    with CaptureQueriesContext(connection) as queries:
        run_deliver(str(run.pk))
    run.refresh_from_db()
    assert (run.state, run.writes) == ("committed", 4)
    ledger = list(
        run.ledger.order_by("sequence").values_list(
            "step_id", "disposition", "counts_write", "created_record", "pg_row_id"
        )
    )
    created = ledger[0][4]
    assert ledger == [
        ("new", "confirmed", True, True, created),
        ("sa", "confirmed", True, False, targets[0].pk),
        ("sb", "confirmed", True, False, targets[1].pk),
        ("sc", "confirmed", True, False, targets[2].pk),
    ]
    after = {r.pk: r for r in Record.reads.filter(pk__in=[t.pk for t in targets])}
    # Each stamp merged its field into the record and moved its version on, once.
    assert [(after[t.pk].fields, after[t.pk].sync_version) for t in targets] == [
        ({"n": 1, "active": True, "note": str(created)}, 2),
        ({"n": 2, "active": True, "note": str(targets[0].pk)}, 2),
        ({"n": 3, "active": True, "note": str(targets[1].pk)}, 2),
    ]
    trail = WriteTrail.reads.filter(process_run_id=str(run.pk)).order_by("id")
    assert list(trail.values_list("process_step", "action", "outcome", "pg_row_id")) == [
        ("new", "create", "allowed", created),
        ("sa", "update", "allowed", targets[0].pk),
        ("sb", "update", "allowed", targets[1].pk),
        ("sc", "update", "allowed", targets[2].pk),
    ]
    statements = [q["sql"] for q in queries.captured_queries]
    alone = [sql for sql in statements if sql.startswith('UPDATE "record"')]
    if connection.vendor == "postgresql":
        assert (len(_groups(queries)), len(alone)) == (1, 0)
        assert not [sql for sql in statements if "FOR UPDATE" in sql]
    else:
        assert (len(_groups(queries)), len(alone)) == (0, 3)


def test_with_step_group_max_1_every_update_is_written_alone(stamped):
    setting_set("processes.step_group_max", 1)
    run, targets = stamped
    with CaptureQueriesContext(connection) as queries:
        run_deliver(str(run.pk))
    run.refresh_from_db()
    assert (run.state, run.writes) == ("committed", 4)
    assert len(_groups(queries)) == (4 if connection.vendor == "postgresql" else 0)
    assert all(r.sync_version == 2 for r in Record.reads.filter(pk__in=[t.pk for t in targets]))


def _other_writer(alice, pg_row_id: str) -> None:
    """Another writer (its own thread and connection) changes the record, and commits."""

    def write() -> None:
        try:
            record_update(
                actor=Actor(user=alice),
                record_type="legacy_customer",
                pg_row_id=pg_row_id,
                parent={"tag": "writer"},
            )
        finally:
            connection.close()

    thread = threading.Thread(target=write)
    thread.start()
    thread.join()


@pytest.mark.postgres_only
@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs PostgreSQL: SQLite serialises writers, and steps there are never grouped",
)
def test_a_record_that_moved_after_it_was_read_is_updated_again_alone(stamped, alice):
    """Another writer changes b's record between the step's read and the group's write: the
    group's statement writes nothing, and the step is made again alone — its hook sees the
    record as the other writer left it, and both changes stand (none is lost)."""
    run, targets = stamped
    seen: list[dict] = []

    def hook(ctx):
        if ctx.record["pgRowId"] != str(targets[1].pk) or ctx.process_run_id is None:
            return
        seen.append(dict(ctx.record["parent"]))
        if len(seen) == 1:  # the first time only: someone else writes the record meanwhile
            _other_writer(alice, str(targets[1].pk))

    unregister = hook_register(slot="before_save", record_type="legacy_customer", hook=hook)
    try:
        with CaptureQueriesContext(connection) as queries:
            run_deliver(str(run.pk))
    finally:
        unregister()
    run.refresh_from_db()
    assert (run.state, run.writes) == ("committed", 4)
    b = Record.reads.get(pk=targets[1].pk)
    assert b.fields == {"n": 2, "active": True, "tag": "writer", "note": str(targets[0].pk)}
    assert b.sync_version == 3  # the other writer's, then the step's
    assert [s.get("tag") for s in seen][-1] == "writer"  # made again, it saw the other write
    assert [r.step_id for r in run.ledger.order_by("sequence")] == ["new", "sa", "sb", "sc"]
    trail = WriteTrail.reads.filter(process_run_id=str(run.pk), outcome="allowed")
    assert trail.count() == 4  # each step's write trailed once
    assert len(seen) == 2
    assert len(_groups(queries)) >= 2  # the failed group, then the steps before and after


def test_a_refused_update_in_a_group_writes_the_steps_before_it_and_its_refusal(stamped):
    run, targets = stamped

    def hook(ctx):
        from records.errors import HookRejection

        if ctx.record["pgRowId"] == str(targets[1].pk):
            raise HookRejection("b stays", code="B_STAYS", field="parent.note")

    unregister = hook_register(slot="before_save", record_type="legacy_customer", hook=hook)
    try:
        run_deliver(str(run.pk))
    finally:
        unregister()
    run.refresh_from_db()
    assert run.state == "failed"
    assert [(r.step_id, r.disposition) for r in run.ledger.order_by("sequence")] == [
        ("new", "confirmed"),
        ("sa", "confirmed"),
        ("sb", "failed"),
        ("sc", "skipped"),
    ]
    versions = dict(
        Record.reads.filter(pk__in=[t.pk for t in targets]).values_list("pk", "sync_version")
    )
    assert [versions[t.pk] for t in targets] == [2, 1, 1]
    refused = WriteTrail.reads.get(outcome="refused")
    assert (refused.code, refused.process_step, refused.action) == ("B_STAYS", "sb", "update")
