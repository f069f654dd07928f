"""A group's updates and deletes of a type with nothing to run on the record first (no hook, not
connected) read their records once for the whole group (``records.step_reads``): a chain of K
updates or deletes costs the same statements whatever K (the claim, the group's read, its
statement), and a record out of the writer's reach is found so by that read — the steps before
it land, and the step is made again alone and refused, as alone. SQLite runs each step in a
transaction: all but the statement counts hold on both."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from processes.engine import grouping
from processes.engine.runner import run_deliver
from records.boundary import record_create
from records.models import Record, WriteTrail
from records.trail import Actor
from tests.processes.engine_support import deploy, invoke, ledger

pytestmark = pytest.mark.django_db(transaction=True)


def _chain(pid: str, kind: str, count: int) -> str:
    if kind == "update":
        step = "update: {{ pgRowId: (ctx) => ctx.input.ids[{n}] }}, build: () => ({{ parent: {{ note: 's{n}' }} }})"
    else:
        step = "delete: {{ pgRowId: (ctx) => ctx.input.ids[{n}] }}"
    steps = ",\n".join(
        f"    {{ id: 's{n}', recordType: 'legacy_customer', " + step.format(n=n) + " }"
        for n in range(count)
    )
    return (
        "import { defineProcess } from '@turbobase/extensions';\n"
        f"export default defineProcess({{\n  id: '{pid}',\n  input: {{ type: 'object' }},\n"
        f"  steps: [\n{steps}\n  ],\n}});\n"
    )


@pytest.fixture(autouse=True)
def _one_group(monkeypatch):
    # A loaded machine must not split the group by its age: the counts here are of its size.
    monkeypatch.setattr(grouping, "RIDE_GROUP_MS", 60_000)


def _records(user, count: int) -> list[Record]:
    actor = Actor(user=user)
    return [
        record_create(actor=actor, record_type="legacy_customer", parent={"n": n}).record
        for n in range(count)
    ]


def _delivered(admin_user, user, kind: str, targets: list[Record], *, deployed=False) -> tuple:
    """Deliver a chain of ``kind`` steps over ``targets``; the run and the statements it made."""
    pid = f"t:{kind}-{len(targets)}"
    if not deployed:
        name = f"processes/{kind}{len(targets)}.ts"
        deploy(_chain(pid, kind, len(targets)), by=admin_user, name=name)
    run = invoke(pid, {"ids": [str(t.pk) for t in targets]}, user)
    with CaptureQueriesContext(connection) as queries:
        run_deliver(str(run.pk))
    run.refresh_from_db()
    return run, [q["sql"] for q in queries.captured_queries]


@pytest.mark.parametrize("kind", ["update", "delete"])
def test_a_chain_of_updates_or_deletes_costs_the_same_statements_whatever_its_length(
    admin_user, alice, kind
):
    for count in (2, 8):
        deploy(
            _chain(f"t:{kind}-{count}", kind, count), by=admin_user, name=f"processes/{count}.ts"
        )
    for count in (2, 8):  # each process delivered once first: its caches and the instance's
        _delivered(admin_user, alice, kind, _records(alice, count), deployed=True)
    short, long = _records(alice, 2), _records(alice, 8)
    run_short, counted_short = _delivered(admin_user, alice, kind, short, deployed=True)
    run_long, counted_long = _delivered(admin_user, alice, kind, long, deployed=True)

    for run, targets in ((run_short, short), (run_long, long)):
        assert (run.state, run.writes) == ("committed", len(targets))
        assert ledger(run) == [(f"s{n}", "confirmed", None) for n in range(len(targets))]
        pks = [t.pk for t in targets]
        assert list(run.ledger.order_by("sequence").values_list("pg_row_id", flat=True)) == pks
        trail = WriteTrail.reads.filter(process_run_id=str(run.pk)).order_by("id")
        assert list(trail.values_list("process_step", "action", "pg_row_id")) == [
            (f"s{n}", kind, pk) for n, pk in enumerate(pks)
        ]
        after = {r.pk: r for r in Record.reads.filter(pk__in=pks)}
        if kind == "update":  # each merged its field into the record, its version moved once
            assert [(after[pk].fields, after[pk].sync_version) for pk in pks] == [
                ({"n": n, "note": f"s{n}"}, 2) for n in range(len(pks))
            ]
        else:
            assert after == {}
    if connection.vendor == "postgresql":
        # The claim, the group's one read of its records, its statement: none more per step.
        assert len(counted_long) == len(counted_short)
        reads = [sql for sql in counted_long if sql.startswith('SELECT "record"')]
        groups = [sql for sql in counted_long if sql.startswith("WITH gate AS")]
        assert (len(reads), len(groups)) == (1, 1)
    else:
        assert len(counted_long) > len(counted_short)


@pytest.mark.parametrize("kind", ["update", "delete"])
def test_a_record_out_of_the_writers_reach_stops_the_group_and_is_refused_alone(
    admin_user, alice, bob, kind
):
    """``legacy_customer`` is read by its owner only: the group's read through alice's scope
    does not find bob's record, so the steps before it land and that step, made alone, is
    refused as not found (untrailed, as alone); nothing after it is written, and bob's record is untouched."""
    mine, theirs = _records(alice, 2), _records(bob, 1)[0]
    targets = [mine[0], theirs, mine[1]]

    run, _ = _delivered(admin_user, alice, kind, targets)

    assert run.state == "failed"
    assert [(r[0], r[1]) for r in ledger(run)] == [
        ("s0", "confirmed"),
        ("s1", "failed"),
        ("s2", "skipped"),
    ]
    assert ledger(run)[1][2] == "RECORD_NOT_FOUND"
    left = dict(
        Record.reads.filter(pk__in=[t.pk for t in targets]).values_list("pk", "sync_version")
    )
    if kind == "update":
        assert [left[t.pk] for t in targets] == [2, 1, 1]
    else:
        assert left == {theirs.pk: 1, mine[1].pk: 1}
    assert Record.reads.get(pk=theirs.pk).fields == {"n": 0}
    trail = WriteTrail.reads.filter(process_run_id=str(run.pk)).order_by("id")
    # Only the step before it was written; a record not found is refused untrailed, as alone.
    assert list(trail.values_list("process_step", "action", "outcome", "pg_row_id")) == [
        ("s0", kind, "allowed", mine[0].pk)
    ]


@pytest.mark.parametrize("kind", ["update", "delete"])
def test_a_last_step_whose_record_is_out_of_reach_fails_the_run_as_alone(
    admin_user, alice, bob, kind
):
    """The walk's last step rides with the run's end (``_last_flush``): its record not found
    by the group's read, nothing is written — neither the step nor the end — and the step,
    made alone, is refused and fails the run."""
    theirs = _records(bob, 1)[0]

    run, _ = _delivered(admin_user, alice, kind, [theirs])

    assert (run.state, run.writes) == ("failed", 0)
    assert ledger(run) == [("s0", "failed", "RECORD_NOT_FOUND")]
    left = Record.reads.get(pk=theirs.pk)
    assert (left.fields, left.sync_version) == ({"n": 0}, 1)
    assert not WriteTrail.reads.filter(process_run_id=str(run.pk), outcome="allowed").exists()
