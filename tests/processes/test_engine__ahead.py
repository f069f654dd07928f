"""A step's next function runs ahead (``Sandbox.call_ahead``): while a create commits, the next
create's first function (its ``when``, else its ``build``) already runs in the sandbox, with the
ctx that step will have. The step takes that result only when its ctx is the same; a ``ctx.query``
it makes is answered when the step awaits it, after the commit; a result not taken is dropped and
never reaches another call, even one of the next delivery on the same pooled interpreter.

``sent`` records the requests the sandbox children receive (the real
``ChildProcess.send_encoded``, observed): a function taken from ahead is called once, one that
missed would be called twice.
"""

from __future__ import annotations

import json

import pytest

from extensions.child_process import ChildProcess
from guardrails.settings import setting_set
from processes.models import ProcessRun
from records.models import Record
from tests.processes.engine_support import deploy, invoke, ledger, pump

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """The paths of the calls sandbox children receive, in order."""
    requests: list[tuple] = []
    send_encoded = ChildProcess.send_encoded

    def recording(self: ChildProcess, encoded: str) -> None:
        for line in encoded.splitlines():  # calls sent ahead together are one line each
            message = json.loads(line)
            if message.get("op") == "call":
                requests.append(tuple(message["path"]))
        send_encoded(self, encoded)

    monkeypatch.setattr(ChildProcess, "send_encoded", recording)
    return requests


def _process(steps: str, *, pid: str = "t:ahead") -> str:
    return f"""import {{ defineProcess }} from '@turbobase/extensions';
export default defineProcess({{
  id: '{pid}',
  input: {{ type: 'object' }},
  onFailure: 'stop',
  steps: [{steps}],
}});
"""


def _run(user, body: dict, pid: str = "t:ahead") -> ProcessRun:
    run = invoke(pid, body, user)
    pump()
    run.refresh_from_db()
    return run


def _fields(run: ProcessRun, step_id: str) -> dict:
    return Record.reads.get(pk=run.ledger.get(step_id=step_id).pg_row_id).fields


# The second build reads, through ctx.query, the record the first step created: its ctx names it.
LINKED = """
  { id: 'first', recordType: 'legacy_customer',
    build: (ctx) => ({ parent: { name: ctx.input.name } }) },
  { id: 'second', recordType: 'legacy_customer', build: async (ctx) => {
      const of = ctx.steps.first.pgRowId;
      const seen = await ctx.query(`legacy_customer?select=name&pg_row_id=eq.${of}`);
      return { parent: { name: `${ctx.input.name} (2)`, custom: { of, run: ctx.runId,
        disposition: ctx.steps.first.disposition, seen: seen.map((r) => r.name) } } };
  } },
  { id: 'third', recordType: 'legacy_customer',
    build: (ctx) => ({ parent: { name: `${ctx.input.name} (3)`, custom: { of: ctx.steps.second.pgRowId } } }) },"""


def test_the_next_build_runs_ahead_with_the_ctx_it_gets_and_reads_what_was_committed(
    admin_user, alice, sent
):
    deploy(_process(LINKED), by=admin_user)
    sent.clear()

    run = _run(alice, {"name": "Acme"})

    assert run.state == "committed"
    assert ledger(run) == [
        ("first", "confirmed", None),
        ("second", "confirmed", None),
        ("third", "confirmed", None),
    ]
    first = run.ledger.get(step_id="first").pg_row_id
    second = run.ledger.get(step_id="second").pg_row_id
    assert _fields(run, "second") == {
        "name": "Acme (2)",
        "custom": {
            "of": str(first),
            "run": str(run.run_id),
            "disposition": "confirmed",
            "seen": ["Acme"],  # the read ran after the first step's record was written
        },
    }
    assert _fields(run, "third") == {"name": "Acme (3)", "custom": {"of": str(second)}}
    # Each build once: the second and third were taken from ahead (a miss calls them again).
    assert sent == [("steps", 0, "build"), ("steps", 1, "build"), ("steps", 2, "build")]


def test_a_when_runs_ahead_and_a_false_one_still_declines_its_step(admin_user, alice, sent):
    steps = """
  { id: 'first', recordType: 'legacy_customer', build: (ctx) => ({ parent: { name: 'one' } }) },
  { id: 'declined', recordType: 'legacy_customer',
    when: (ctx) => ctx.steps.first.disposition !== 'confirmed',
    build: (ctx) => ({ parent: { name: 'never' } }) },
  { id: 'taken', recordType: 'legacy_customer',
    when: (ctx) => ctx.steps.first.pgRowId !== null && ctx.steps.declined.disposition === 'skipped',
    build: (ctx) => ({ parent: { name: 'after', custom: { of: ctx.steps.first.pgRowId } } }) },"""
    deploy(_process(steps), by=admin_user)
    sent.clear()

    run = _run(alice, {})

    assert run.state == "committed"
    assert ledger(run) == [
        ("first", "confirmed", None),
        ("declined", "skipped", None),
        ("taken", "confirmed", None),
    ]
    assert not Record.reads.filter(fields__name="never").exists()
    assert _fields(run, "taken") == {
        "name": "after",
        "custom": {"of": str(run.ledger.get(step_id="first").pg_row_id)},
    }
    # The declined step's when was taken from ahead; nothing ran ahead of a declined step.
    assert sent == [
        ("steps", 0, "build"),
        ("steps", 1, "when"),
        ("steps", 2, "when"),
        ("steps", 2, "build"),
    ]


def test_a_result_not_taken_is_dropped_and_the_next_delivery_answers_rightly(
    admin_user, alice, sent
):
    deploy(_process(LINKED), by=admin_user)
    setting_set("processes.max_writes_per_run", 1)  # stops the run after its first step's write
    stopped = _run(alice, {"name": "Stopped"})

    assert (stopped.state, stopped.outstanding) == ("committed", 2)
    assert "processes.max_writes_per_run (1)" in stopped.reason
    assert ledger(stopped) == [("first", "confirmed", None)]
    # The second build was sent ahead, then the run stopped: its result is left unread in the
    # pooled interpreter until the next delivery drops it.
    assert sent[-2:] == [("steps", 0, "build"), ("steps", 1, "build")]

    setting_set("processes.max_writes_per_run", 100)
    sent.clear()
    run = _run(alice, {"name": "Next"})

    assert run.state == "committed"
    first = run.ledger.get(step_id="first").pg_row_id
    assert _fields(run, "first") == {"name": "Next"}
    assert _fields(run, "second") == {
        "name": "Next (2)",
        "custom": {
            "of": str(first),
            "run": str(run.run_id),
            "disposition": "confirmed",
            "seen": ["Next"],
        },
    }
    assert not Record.reads.filter(fields__name="Stopped (2)").exists()
    assert sent == [("steps", 0, "build"), ("steps", 1, "build"), ("steps", 2, "build")]


def test_a_step_refused_after_its_build_ran_ahead_fails_the_run_as_before(admin_user, alice, sent):
    steps = """
  { id: 'order', recordType: 'legacy_customer', build: (ctx) => ({ parent: { name: 'kept' } }) },
  { id: 'item', recordType: 'migration_item',
    build: (ctx) => ({ parent: { note: `no legacy id after ${ctx.steps.order.pgRowId}` } }) },
  { id: 'after', recordType: 'legacy_customer', build: (ctx) => ({ parent: { name: 'never' } }) },"""
    deploy(_process(steps, pid="t:refused"), by=admin_user)

    failed = _run(alice, {}, pid="t:refused")

    assert failed.state == "failed"
    assert [row[:2] for row in ledger(failed)] == [
        ("order", "confirmed"),
        ("item", "failed"),
        ("after", "skipped"),
    ]
    assert ledger(failed)[1][2]  # refused by the boundary, by code
    assert not Record.reads.filter(fields__name="never").exists()

    deploy(_process(LINKED), by=admin_user)
    sent.clear()
    run = _run(alice, {"name": "Then"})
    assert run.state == "committed"
    assert _fields(run, "second")["custom"]["seen"] == ["Then"]
    assert sent == [("steps", 0, "build"), ("steps", 1, "build"), ("steps", 2, "build")]
