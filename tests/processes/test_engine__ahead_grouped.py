"""A chain of creates that group sends its next steps' functions ahead together
(``grouping.LookAhead``, ``Sandbox.calls_ahead``): each create's record id is chosen before it is
made, so the ctx of the steps after it is known, and up to ``AHEAD_STEPS`` steps' builds go to the
sandbox in one request — one wake-up of the child for several steps. Each build is still its own
call, taken only by a step whose ctx is the same; a step refused in the middle drops what was sent
after it.

``writes`` records each request write a sandbox child receives, as the calls' paths in it (the
real ``ChildProcess.send_encoded``, observed). Grouping happens on PostgreSQL only."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from extensions.child_process import ChildProcess
from processes.engine.grouping import AHEAD_STEPS
from processes.models import ProcessRun
from records.boundary import record_create
from records.models import Record
from records.trail import Actor
from tests.processes.engine_support import deploy, invoke, ledger, pump

pytestmark = [
    pytest.mark.django_db(transaction=True),  # grouping needs autocommit (no test atomic)
    pytest.mark.skipif(connection.vendor != "postgresql", reason="steps group on PostgreSQL only"),
]

STEPS = 10


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The step ids of the calls in each request write sandbox children receive, in order."""
    seen: list[list[str]] = []
    send_encoded = ChildProcess.send_encoded

    def recording(self: ChildProcess, encoded: str) -> None:
        messages = [json.loads(line) for line in encoded.splitlines()]
        calls = [m["path"][1] for m in messages if m.get("op") == "call"]
        if calls:
            seen.append([f"s{n}" for n in calls])
        send_encoded(self, encoded)

    monkeypatch.setattr(ChildProcess, "send_encoded", recording)
    return seen


def _process(pid: str, refused_at: int | None = None) -> str:
    def entry(n: int) -> str:
        of = "null" if n == 0 else f"ctx.steps.s{n - 1}.pgRowId"
        if n == refused_at:  # the boundary refuses it: a migration_item needs its legacy id
            return f"{{ id: 's{n}', recordType: 'migration_item', build: (ctx) => ({{ parent: {{ note: 'x' }} }}) }}"
        return (
            f"{{ id: 's{n}', recordType: 'legacy_customer', "
            f"build: (ctx) => ({{ parent: {{ name: 'n{n}', custom: {{ of: {of} }} }} }}) }}"
        )

    steps = ",\n    ".join(entry(n) for n in range(STEPS))
    return f"""import {{ defineProcess }} from '@turbobase/extensions';
export default defineProcess({{
  id: '{pid}',
  input: {{ type: 'object' }},
  onFailure: 'stop',
  steps: [
    {steps}
  ],
}});
"""


def _run(user, pid: str) -> ProcessRun:
    run = invoke(pid, {}, user)
    pump()
    run.refresh_from_db()
    return run


def test_a_chain_of_creates_sends_its_next_builds_in_one_request_and_takes_each(
    admin_user, alice, writes
):
    deploy(_process("t:ahead-many"), by=admin_user)
    writes.clear()

    run = _run(alice, "t:ahead-many")

    assert run.state == "committed"
    assert ledger(run) == [(f"s{n}", "confirmed", None) for n in range(STEPS)]
    ids = [run.ledger.get(step_id=f"s{n}").pg_row_id for n in range(STEPS)]
    records = {r.pk: r.fields for r in Record.reads.filter(pk__in=ids)}
    assert [records[pk] for pk in ids] == [
        {"name": f"n{n}", "custom": {"of": None if n == 0 else str(ids[n - 1])}}
        for n in range(STEPS)
    ]
    # The first build is called; then the next AHEAD_STEPS builds go in one request, and the
    # rest once only the next is ahead. Each once: a build not taken would be sent again.
    assert writes == [
        ["s0"],
        [f"s{n}" for n in range(1, AHEAD_STEPS + 1)],
        [f"s{n}" for n in range(AHEAD_STEPS + 1, STEPS)],
    ]


def test_a_step_refused_in_the_middle_drops_the_builds_sent_after_it(admin_user, alice, writes):
    deploy(_process("t:ahead-refused", refused_at=3), by=admin_user)
    writes.clear()

    failed = _run(alice, "t:ahead-refused")

    assert failed.state == "failed"
    assert [row[:2] for row in ledger(failed)] == [
        *[(f"s{n}", "confirmed") for n in range(3)],
        ("s3", "failed"),
        *[(f"s{n}", "skipped") for n in range(4, STEPS)],
    ]
    assert not Record.reads.filter(fields__name__in=[f"n{n}" for n in range(4, STEPS)]).exists()
    # The builds after the refused step were sent ahead and never taken; the next delivery on the
    # pooled interpreter drops them and takes its own.
    assert writes == [["s0"], [f"s{n}" for n in range(1, AHEAD_STEPS + 1)]]

    deploy(_process("t:ahead-many"), by=admin_user)
    writes.clear()
    run = _run(alice, "t:ahead-many")
    assert run.state == "committed"
    first = run.ledger.get(step_id="s0").pg_row_id
    second = run.ledger.get(step_id="s1").pg_row_id
    assert Record.reads.get(pk=second).fields == {"name": "n1", "custom": {"of": str(first)}}
    assert writes[0] == ["s0"] and sum(len(w) for w in writes) == STEPS


UPDATES = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:ahead-updates',
  input: { type: 'object' },
  steps: [
    { id: 's0', recordType: 'legacy_customer', update: { pgRowId: (ctx) => ctx.input.ids[0] },
      build: (ctx) => ({ parent: { note: 'a' } }) },
    { id: 's1', recordType: 'legacy_customer', update: { pgRowId: (ctx) => ctx.input.ids[1] },
      build: (ctx) => ({ parent: { note: `after ${ctx.steps.s0.pgRowId}` } }) },
    { id: 's2', recordType: 'legacy_customer', update: { pgRowId: (ctx) => ctx.input.ids[2] },
      build: (ctx) => ({ parent: { note: `after ${ctx.steps.s1.pgRowId}` } }) },
  ],
});
"""


def test_a_chain_of_updates_sends_each_next_step_s_functions_in_one_request(
    admin_user, alice, writes
):
    deploy(UPDATES, by=admin_user)
    actor = Actor(user=alice)
    ids = [
        str(record_create(actor=actor, record_type="legacy_customer", parent={"n": n}).record.pk)
        for n in range(3)
    ]
    writes.clear()

    run = invoke("t:ahead-updates", {"ids": ids}, alice)
    pump()
    run.refresh_from_db()

    assert run.state == "committed"
    notes = {str(r.pk): r.fields["note"] for r in Record.reads.filter(pk__in=ids)}
    assert [notes[pk] for pk in ids] == ["a", f"after {ids[0]}", f"after {ids[1]}"]
    # The first step's build and address are called; each next step's go together, ahead (its
    # ctx holds this step's pgRowId, known once this step's address answered).
    assert writes == [["s0"], ["s0"], ["s1", "s1"], ["s2", "s2"]]
