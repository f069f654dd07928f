"""An update of a record its own group creates (``records.step_folds``): it joins the group without
a read — its checks and ``before_save`` hooks run on the record as the group holds it, and the
create's INSERT writes the record as the update leaves it — so a create and updates of it are one
statement, leaving what the same steps written one by one leave. SQLite writes each step alone:
all but the statement counts hold on both."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from guardrails.settings import setting_set
from processes.engine import grouping
from processes.engine.claim import run_claim
from processes.engine.runner import ChainRunner, run_deliver
from processes.models import ProcessRun
from records.hooks import hook_register
from records.models import Record, WriteTrail
from tests.processes.engine_support import deploy, invoke

pytestmark = pytest.mark.django_db(transaction=True)

OWN = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:own',
  input: { type: 'object' },
  steps: [
    { id: 'a', recordType: 'legacy_customer', build: (ctx) => ({ parent: { n: 1, tag: 'a' } }) },
    { id: 'u', recordType: 'legacy_customer', update: { pgRowId: (ctx) => ctx.steps.a.pgRowId },
      build: (ctx) => ({ parent: { tag: 'u', note: ctx.steps.a.pgRowId } }) },
    { id: 'v', recordType: 'legacy_customer', update: { pgRowId: (ctx) => ctx.steps.u.pgRowId },
      build: (ctx) => ({ parent: { tag: 'v', n: 3 } }) },
    { id: 'c', recordType: 'legacy_customer', build: (ctx) => ({ parent: { n: 4 } }) },
  ],
});
"""


@pytest.fixture
def own(admin_user, alice, monkeypatch) -> ProcessRun:
    monkeypatch.setattr(grouping, "RIDE_GROUP_MS", 60_000)  # a loaded machine must not cut it
    deploy(OWN, by=admin_user)
    return invoke("t:own", {}, alice)


def _outcome(run: ProcessRun) -> tuple[list, list, list]:
    """The ledger, the records and the trail, generated ids named by the step that made them."""
    ledger = list(
        run.ledger.order_by("sequence").values_list("step_id", "disposition", "pg_row_id")
    )
    names = {}
    for step, _, pk in ledger:
        if pk is not None:
            names.setdefault(pk, step)
    records = sorted(
        (names[r.pk], r.fields, r.sync_version) for r in Record.reads.filter(pk__in=names)
    )
    trail = WriteTrail.reads.filter(process_run_id=str(run.pk)).order_by("id")
    return (
        [(step, disposition, names.get(pk)) for step, disposition, pk in ledger],
        records,
        [
            (s, a, o, names.get(pk))
            for s, a, o, pk in trail.values_list("process_step", "action", "outcome", "pg_row_id")
        ],
    )


def _groups(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if q["sql"].startswith("WITH gate AS")]


EXPECTED = (
    [
        ("a", "confirmed", "a"),
        ("u", "confirmed", "a"),
        ("v", "confirmed", "a"),
        ("c", "confirmed", "c"),
    ],
    [("a", {"n": 3, "tag": "v", "note": "<a>"}, 3), ("c", {"n": 4}, 1)],
    [
        ("a", "create", "allowed", "a"),
        ("u", "update", "allowed", "a"),
        ("v", "update", "allowed", "a"),
        ("c", "create", "allowed", "c"),
    ],
)


def _expected(run: ProcessRun) -> tuple:
    a = run.ledger.get(step_id="a").pg_row_id
    records = [(n, {**f, "note": str(a)} if "note" in f else f, v) for n, f, v in EXPECTED[1]]
    return EXPECTED[0], records, EXPECTED[2]


def test_a_create_and_its_updates_are_one_statement_with_no_read(own):
    with CaptureQueriesContext(connection) as queries:
        run_deliver(str(own.pk))
    own.refresh_from_db()
    assert (own.state, own.writes) == ("committed", 4)
    assert _outcome(own) == _expected(own)
    if connection.vendor == "postgresql":
        statements = [q["sql"] for q in queries.captured_queries]
        assert len(_groups(queries)) == 1
        assert not [sql for sql in statements if sql.startswith('SELECT "record"')]
        assert not [sql for sql in statements if sql.startswith('UPDATE "record"')]


def test_with_step_group_max_1_the_same_steps_leave_the_same_rows(own):
    setting_set("processes.step_group_max", 1)
    run_deliver(str(own.pk))
    own.refresh_from_db()
    assert (own.state, own.writes) == ("committed", 4)
    assert _outcome(own) == _expected(own)


def test_the_hooks_see_the_record_as_the_group_leaves_it_and_may_refuse(own):
    seen: list[tuple] = []

    def hook(ctx):
        from records.errors import HookRejection

        seen.append((ctx.operation, ctx.record["parent"], ctx.record["syncVersion"]))
        if ctx.record["parent"].get("tag") == "v":
            raise HookRejection("no v", code="NO_V", field="parent.tag")

    unregister = hook_register(slot="before_save", record_type="legacy_customer", hook=hook)
    try:
        run_deliver(str(own.pk))
    finally:
        unregister()
    own.refresh_from_db()
    a = str(own.ledger.get(step_id="a").pg_row_id)
    assert seen == [
        ("create", {"n": 1, "tag": "a"}, 1),
        ("update", {"n": 1, "tag": "u", "note": a}, 1),
        ("update", {"n": 3, "tag": "v", "note": a}, 2),
    ]
    assert own.state == "failed"
    ledger, records, trail = _outcome(own)
    assert ledger == [
        ("a", "confirmed", "a"),
        ("u", "confirmed", "a"),
        ("v", "failed", None),
        ("c", "skipped", None),
    ]
    assert records == [("a", {"n": 1, "tag": "u", "note": a}, 2)]  # a and u landed; v did not
    assert trail[-1][:3] == ("v", "update", "refused")
    assert WriteTrail.reads.get(outcome="refused").code == "NO_V"


def test_a_cancel_read_by_the_statement_writes_the_create_as_created(own):
    ProcessRun.objects.filter(pk=own.pk).update(slices=1)  # nothing to hold before step a
    claimed, lease = run_claim(str(own.pk), 1)
    ProcessRun.objects.filter(pk=own.pk).update(cancel_requested=True)  # after the claim read
    ChainRunner(claimed, lease).execute()
    own.refresh_from_db()
    assert (own.state, own.writes) == ("cancelled", 1)
    ledger, records, trail = _outcome(own)
    assert ledger == [("a", "confirmed", "a")]
    assert records == [("a", {"n": 1, "tag": "a"}, 1)]  # not as u and v would have left it
    assert trail == [("a", "create", "allowed", "a")]
