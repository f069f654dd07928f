"""Redrive in real django-q2 workers: the failed run goes back on its lane and a worker carries it
on from the failed step. The cause is data (a record step two reads), fixed between the runs."""

from __future__ import annotations

import pytest

from processes.invoke import run_invoke
from processes.models import ProcessRun
from processes.redrive import run_redrive
from records.boundary import record_create
from records.models import Record
from records.trail import Actor
from tests.processes.engine_support import deploy
from tests.workers import QCluster, wait_until

pytestmark = [pytest.mark.workers, pytest.mark.django_db(transaction=True)]

# Step two names its item after a salesOrder with memo 'go': while there is none, the item has
# no legacy_id and the boundary refuses it.
NEEDS_GO = """\
import { defineProcess } from '@turbobase/extensions';

export default defineProcess({
  id: 't:needs-go',
  input: { type: 'object' },
  onFailure: 'stop',
  steps: [
    { id: 'one', recordType: 'salesOrder', build: (ctx) => ({ parent: { memo: 'one' } }) },
    {
      id: 'two',
      recordType: 'migration_item',
      build: async (ctx) => {
        const [go] = await ctx.query('salesOrder?select=memo&memo=eq.go');
        return { parent: { legacy_id: go?.memo ?? null, company_name: 'C' } };
      },
    },
    { id: 'three', recordType: 'salesOrder', build: (ctx) => ({ parent: { memo: 'three' } }) },
  ],
});
"""


def _state(run: ProcessRun) -> str:
    return ProcessRun.objects.values_list("state", flat=True).get(pk=run.pk)


def test_a_worker_carries_a_redriven_run_on_from_its_failed_step(admin_user, alice, tmp_path):
    deploy(NEEDS_GO, by=admin_user)
    run = run_invoke(process_id="t:needs-go", body={}, user=alice)
    with QCluster(workers=1, log_path=tmp_path / "q.log"):
        wait_until(lambda: _state(run) == "failed", timeout=60, message="the run failed")
        record_create(actor=Actor(user=alice), record_type="salesOrder", parent={"memo": "go"})
        assert run_redrive(user=alice, run_id=str(run.pk)).run.state == "queued"
        wait_until(lambda: _state(run) == "committed", timeout=60, message="the run committed")
    run.refresh_from_db()
    assert run.redrives == 1
    assert list(
        run.ledger.order_by("sequence").values_list("step_id", "disposition", "superseded")
    ) == [
        ("one", "confirmed", 0),
        ("two", "failed", 1),
        ("two", "confirmed", 0),
        ("three", "confirmed", 0),
    ]
    assert Record.reads.filter(record_type="salesOrder", fields__memo="one").count() == 1
    assert Record.reads.get(record_type="migration_item").fields["legacy_id"] == "go"
