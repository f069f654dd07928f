"""Delete steps of app-owned records grouped (``processes.engine.grouping``): each is checked, its
record read as its writer may see it and its ``before_delete`` hooks run at once; the records are
removed with their neighbours' writes in one statement, only where each is still at the version
read, and their ``after_delete`` hooks run once that statement committed. A connected record's
delete groups too: its rule and delete window decided per step as it is made ready, the record
hidden, its outbound delete queued and the window charged by the group's statement, the window
decided again under its lock as the group commits; a held delete or a full window runs alone."""

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
from tests.concurrency import meanwhile
from tests.processes.engine_support import deploy, invoke

pytestmark = pytest.mark.django_db(transaction=True)


def _grouped_on_postgres(test):
    """Marks a test of writers meeting a group: PostgreSQL only (SQLite serialises writers, and
    steps there are never grouped)."""
    only = pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: SQLite serialises writers, and steps there are never grouped",
    )
    return pytest.mark.postgres_only(only(test))


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


@_grouped_on_postgres
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


# -- a connected type's deletes (customer: the sandbox source) ------------------------------------

SWEEP = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:sweep',
  input: { type: 'object' },
  steps: [
    { id: 'new', recordType: 'customer', build: (ctx) => ({ parent: { company_name: 'New' } }) },
    { id: 'up', recordType: 'legacy_customer', update: { pgRowId: (ctx) => ctx.input.l },
      build: (ctx) => ({ parent: { tag: 'up' } }) },
    { id: 'del', recordType: 'customer', delete: { pgRowId: (ctx) => ctx.input.c } },
    { id: 'del2', recordType: 'customer', delete: { pgRowId: (ctx) => ctx.input.d } },
    { id: 'after', recordType: 'legacy_customer', build: (ctx) => ({ parent: { n: 9 } }) },
  ],
});
"""


def _sweep_once(alice, group_max: int, *, cap: int = 60, spend=None) -> tuple[dict, dict, list]:
    """From a fresh state: two synced customers and a legacy record, the sweep's first delivery
    (what it wrote then, and its statements), then everything pumped to the end."""
    from guardrails.models import WindowEvent
    from guardrails.rules import rule_set
    from guardrails.settings import setting_set
    from tests.processes.engine_support import pump
    from tests.processes.grouping_support import observed, wipe

    wipe()
    setting_set("processes.step_group_max", 1)
    actor = Actor(user=alice)
    legacy = record_create(actor=actor, record_type="legacy_customer", parent={"n": 1}).record
    customers = [
        record_create(actor=actor, record_type="customer", parent={"company_name": name}).record
        for name in ("C", "D")
    ]
    pump()  # the customers reach the source and come back synced
    rule_set(record_type="customer", action="delete", decision="allow")
    setting_set("guardrails.max_deletes_per_min", cap)
    setting_set("processes.delete_wait_budget_ms", 1)  # a full window ends the run
    setting_set("processes.step_group_max", group_max)
    body = {"l": str(legacy.pk), "c": str(customers[0].pk), "d": str(customers[1].pk)}
    run = invoke("t:sweep", body, alice)
    unregister = (
        hook_register(slot="before_delete", record_type="customer", hook=spend) if spend else None
    )
    try:
        with CaptureQueriesContext(connection) as queries:
            run_deliver(str(run.pk))
    finally:
        if unregister:
            unregister()
    seeds = [str(legacy.pk)] + [str(c.pk) for c in customers]
    first = observed(run, seeds)
    first["charges"] = WindowEvent.objects.count()
    pump()
    return first, observed(run, seeds), [q["sql"] for q in queries.captured_queries]


@pytest.fixture
def sweep(admin_user):
    deploy(SWEEP, by=admin_user)


def test_a_connected_delete_joins_the_group_and_lands_as_it_does_alone(sweep, alice):
    """The create, the update and the first connected delete share one statement: the record
    hidden, its outbound delete queued after the create's, the window charged, its ledger row
    waiting on that delete; the run parks on the source's verdict exactly as when every step is
    written alone, and ends the same."""
    grouped_first, grouped, statements = _sweep_once(alice, 16)
    alone_first, alone, _ = _sweep_once(alice, 1)
    assert grouped_first == alone_first
    assert grouped == alone
    assert grouped_first["charges"] == 1
    assert grouped_first["run"][4] == "awaitingSource"
    ledger = [(row[1], row[6], row[14], row[-1]) for row in grouped_first["ledger"]]
    # (step, disposition, awaiting its verdict, no write state named)
    assert ledger == [
        ("new", "confirmed", False, True),
        ("up", "confirmed", False, True),
        ("del", "confirmed", True, False),
    ]
    outbound = [(w[0], w[2], w[3], w[4]) for w in grouped_first["outbound"][-2:]]
    assert outbound == [
        ("customer", "step:new", "create", "pending"),
        ("customer", "seed:1", "delete", "pending"),
    ]
    hidden = {r[0]: r[4] for r in grouped_first["records"]}
    assert hidden["seed:1"] == "deleting"
    assert [s[:2] for s in grouped["sent"][-3:]] == [
        ("customer", "create"),
        ("customer", "delete"),
        ("customer", "delete"),
    ]
    assert grouped["run"][0] == "committed"
    if connection.vendor == "postgresql":
        groups = [q for q in statements if q.startswith("WITH gate AS")]
        hides = [q for q in statements if q.startswith('UPDATE "record" SET "sync_state"')]
        assert (len(groups), len(hides)) == (1, 0)


def test_a_full_window_ends_the_group_before_the_delete_it_holds(sweep, alice):
    """A cap of one: the first delete takes the window's last slot, the second waits for it —
    in the grouped run as in the one written alone (it never joins a group)."""
    grouped_first, grouped, _ = _sweep_once(alice, 16, cap=1)
    alone_first, alone, _ = _sweep_once(alice, 1, cap=1)
    assert (grouped_first, grouped) == (alone_first, alone)
    assert [row[1] for row in grouped["ledger"]] == ["new", "up", "del", "del2", "after"]
    assert [row[6:8] for row in grouped["ledger"][2:4]] == [
        ("confirmed", ""),
        ("skipped", "not_reached"),
    ]  # the window would not free within the wait's budget: the run ends there
    assert "guardrails.max_deletes_per_min" in grouped["run"][1]
    records = {r[0]: r[4] for r in grouped["records"]}
    assert (records["seed:1"], records["seed:2"]) == ("deleted", "synced")


def _first_time_meanwhile(seen: list, write):
    """A before_delete hook: the first time, another writer (its own connection) runs
    ``write(pg_row_id)`` and commits, after the grouped delete found the step's record ready."""

    def hook(ctx) -> None:
        seen.append(ctx.record["pgRowId"])
        if len(seen) == 1:
            meanwhile(write, ctx.record["pgRowId"])

    return hook


def _spend_the_slot(seen: list):
    """Another writer takes the window's last slot, after the grouped delete found it free."""
    from guardrails.windows import window_admit

    def spend(_pk: str) -> None:
        assert window_admit(kind="delete", source_system="netsuite").admitted

    return _first_time_meanwhile(seen, spend)


@_grouped_on_postgres
def test_a_slot_spent_by_another_writer_meanwhile_is_not_spent_twice(sweep, alice):
    """The window had room when the delete was made ready; another writer took it before the
    group committed. The group's re-check under the window's lock finds it full: the steps before
    the delete are written without it, and the delete, made alone, finds the window full (its
    wait's budget of 1 ms ends the run there): one charge, nothing hidden, no delete queued."""
    seen: list = []
    first, _, _ = _sweep_once(alice, 16, cap=1, spend=_spend_the_slot(seen))
    assert first["charges"] == 1  # the other writer's only
    assert [row[:2] for row in first["trail"][-2:]] == [
        ("create", "allowed"),
        ("update", "allowed"),
    ]
    assert [(row[1], row[6], row[7]) for row in first["ledger"][:3]] == [
        ("new", "confirmed", ""),
        ("up", "confirmed", ""),
        ("del", "skipped", "not_reached"),  # alone, it found the window full
    ]
    assert "guardrails.max_deletes_per_min" in first["run"][1]
    assert {r[0]: r[4] for r in first["records"]}["seed:1"] == "synced"  # not hidden
    assert not [w for w in first["outbound"] if w[3] == "delete"]
    assert len(seen) == 2  # made ready, then made again alone


def _delete_it_first(seen: list, alice):
    """Another writer deletes the same record alone — hiding it without moving its version."""
    from records.boundary import record_delete

    def delete(pk: str) -> None:
        record_delete(actor=Actor(user=alice), record_type="customer", pg_row_id=pk)

    return _first_time_meanwhile(seen, delete)


@_grouped_on_postgres
def test_a_record_another_writer_hid_meanwhile_is_not_deleted_twice(sweep, alice):
    """Between the grouped delete's check and the group's write another writer deleted the same
    record (hidden, its version unchanged). The group finds it no longer in the sync state read:
    the steps before are written without it, and the delete, made alone, no longer finds the
    record. One outbound delete, one charge."""
    seen: list = []
    first, _, _ = _sweep_once(alice, 16, spend=_delete_it_first(seen, alice))
    assert first["charges"] == 1
    deletes = [w for w in first["outbound"] if w[3] == "delete"]
    assert [(w[2], w[4]) for w in deletes] == [("seed:1", "pending")]
    assert [(row[1], row[6]) for row in first["ledger"][:3]] == [
        ("new", "confirmed"),
        ("up", "confirmed"),
        ("del", "failed"),
    ]
    assert first["ledger"][2][16] == "RECORD_NOT_FOUND"
    # The grouped delete's check, the other writer's delete; made again alone, the step stopped
    # at the record's address, before any hook.
    assert len(seen) == 2
