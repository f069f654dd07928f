"""Delete steps of app-owned records grouped (``processes.engine.grouping``): each is checked, its
record read as its writer may see it and its ``before_delete`` hooks run at once; the records are
removed with their neighbours' writes in one statement, only where each is still at the version
read, and their ``after_delete`` hooks run once that statement committed. A connected type's
delete is never grouped (the delete window, holds and the source decide it, one at a time)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from processes.engine import grouping
from processes.engine.runner import run_deliver
from processes.models import ProcessRun
from records.boundary import record_create
from records.hooks import hook_register
from records.models import Record, WriteTrail
from records.trail import Actor
from tests.processes.engine_support import deploy, invoke

pytestmark = pytest.mark.django_db(transaction=True)

CLEANUP = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:cleanup',
  input: { type: 'object' },
  steps: [
    { id: 'new', recordType: 'legacy_customer', build: (ctx) => ({ parent: { n: 0 } }) },
    { id: 'da', recordType: 'legacy_customer', delete: { pgRowId: (ctx) => ctx.input.a } },
    { id: 'db', recordType: 'legacy_customer', delete: { pgRowId: (ctx) => ctx.input.b } },
    { id: 'dc', recordType: 'legacy_customer', delete: { pgRowId: (ctx) => ctx.input.c } },
  ],
});
"""


@pytest.fixture
def cleanup(admin_user, alice, monkeypatch) -> tuple[ProcessRun, list[Record]]:
    monkeypatch.setattr(grouping, "RIDE_GROUP_MS", 60_000)  # the counts here are of its size
    actor = Actor(user=alice)
    targets = [
        record_create(actor=actor, record_type="legacy_customer", parent={"n": n}).record
        for n in (1, 2, 3)
    ]
    deploy(CLEANUP, by=admin_user)
    body = {"a": str(targets[0].pk), "b": str(targets[1].pk), "c": str(targets[2].pk)}
    return invoke("t:cleanup", body, alice), targets


def _hooks(slot: str, seen: list):
    return hook_register(
        slot=slot,
        record_type="legacy_customer",
        hook=lambda ctx: seen.append((slot, ctx.record["parent"]["n"])),
    )


def test_deletes_after_a_create_are_one_statement_and_their_hooks_run_per_record(cleanup):
    run, targets = cleanup
    seen: list = []
    undo = [_hooks("before_delete", seen), _hooks("after_delete", seen)]
    try:
        with CaptureQueriesContext(connection) as queries:
            run_deliver(str(run.pk))
    finally:
        for unregister in undo:
            unregister()
    run.refresh_from_db()
    assert (run.state, run.writes) == ("committed", 4)
    assert not Record.reads.filter(pk__in=[t.pk for t in targets]).exists()
    ledger = list(
        run.ledger.order_by("sequence").values_list("step_id", "disposition", "pg_row_id")
    )
    assert ledger[1:] == [
        ("da", "confirmed", targets[0].pk),
        ("db", "confirmed", targets[1].pk),
        ("dc", "confirmed", targets[2].pk),
    ]
    trail = WriteTrail.reads.filter(process_run_id=str(run.pk)).order_by("id")
    assert list(trail.values_list("process_step", "action", "outcome")) == [
        ("new", "create", "allowed"),
        ("da", "delete", "allowed"),
        ("db", "delete", "allowed"),
        ("dc", "delete", "allowed"),
    ]
    # Each record's hooks once: before its delete, in step order, and after_delete after commit.
    assert sorted(seen) == sorted(
        [("before_delete", n) for n in (1, 2, 3)] + [("after_delete", n) for n in (1, 2, 3)]
    )
    assert [s for s in seen if s[0] == "before_delete"] == [("before_delete", n) for n in (1, 2, 3)]
    groups = [q for q in queries.captured_queries if q["sql"].startswith("WITH gate AS")]
    alone = [q for q in queries.captured_queries if q["sql"].startswith('DELETE FROM "record"')]
    if connection.vendor == "postgresql":
        assert (len(groups), len(alone)) == (1, 0)
    else:
        assert (len(groups), len(alone)) == (0, 3)


def test_a_refused_delete_writes_the_steps_before_it_and_leaves_its_record(cleanup):
    run, targets = cleanup
    from records.errors import HookRejection

    def hook(ctx):
        if ctx.record["parent"]["n"] == 2:
            raise HookRejection("two stays", code="TWO_STAYS", field=None)

    unregister = hook_register(slot="before_delete", record_type="legacy_customer", hook=hook)
    try:
        run_deliver(str(run.pk))
    finally:
        unregister()
    run.refresh_from_db()
    assert run.state == "failed"
    assert [(r.step_id, r.disposition) for r in run.ledger.order_by("sequence")] == [
        ("new", "confirmed"),
        ("da", "confirmed"),
        ("db", "failed"),
        ("dc", "skipped"),
    ]
    left = set(Record.reads.filter(pk__in=[t.pk for t in targets]).values_list("pk", flat=True))
    assert left == {targets[1].pk, targets[2].pk}
    refused = WriteTrail.reads.get(outcome="refused")
    assert (refused.code, refused.process_step, refused.action) == ("TWO_STAYS", "db", "delete")


@pytest.mark.postgres_only
@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs PostgreSQL: SQLite serialises writers, and steps there are never grouped",
)
def test_a_record_changed_after_its_delete_was_checked_is_deleted_again_alone(cleanup, alice):
    """Another writer changes b between its delete's check and the group's write: the statement
    removes nothing, and b's delete is made again alone — its hook sees the record as it is."""
    from tests.processes.test_engine__grouped_updates import _other_writer

    run, targets = cleanup
    seen: list[dict] = []

    def hook(ctx):
        if ctx.record["pgRowId"] != str(targets[1].pk):
            return
        seen.append(dict(ctx.record["parent"]))
        if len(seen) == 1:
            _other_writer(alice, str(targets[1].pk))

    unregister = hook_register(slot="before_delete", record_type="legacy_customer", hook=hook)
    try:
        run_deliver(str(run.pk))
    finally:
        unregister()
    run.refresh_from_db()
    assert (run.state, run.writes) == ("committed", 4)
    assert not Record.reads.filter(pk__in=[t.pk for t in targets]).exists()
    assert [s.get("tag") for s in seen] == [None, "writer"]
    assert [r.step_id for r in run.ledger.order_by("sequence")] == ["new", "da", "db", "dc"]
    deleted = WriteTrail.reads.filter(process_run_id=str(run.pk), action="delete")
    assert deleted.count() == 3
