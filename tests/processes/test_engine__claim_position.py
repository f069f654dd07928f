"""A claim's ledger position: its cost does not grow with the ledger (PostgreSQL reads the top
sequence from the ``(run, sequence)`` index and takes ``writes`` from the run row the claim
answers), and it stays the truth whatever an earlier delivery left."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from processes.engine.claim import run_claim
from processes.engine.ledger import ledger_position_empty, ledger_write, sequence_next
from processes.engine.plan import PlannedStep
from processes.models import Disposition, ProcessRun, ProcessRunStep
from processes.steering import run_stop
from tests.processes.engine_support import deploy, invoke
from tests.processes.writes_support import assert_writes_counted

pytestmark = pytest.mark.django_db

ONE_STEP = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:one',
  input: { type: 'object' },
  steps: [{ id: 'a', recordType: 'legacy_customer', build: (ctx) => ({ parent: { n: 1 } }) }],
});
"""

ROWS = 3_000
WRITES = ROWS - ROWS // 3  # every third row counts no write (a skip, a read)


def _left_by_a_dead_delivery(run: ProcessRun, *, writes: int, **columns) -> None:
    """``run`` as a SIGKILLed worker leaves it: running, its lease run out, a ledger of ROWS rows
    (every third counting no write) and the run row's ``writes`` as ``writes``."""
    ProcessRunStep.objects.bulk_create(
        [
            ProcessRunStep(
                run=run,
                sequence=n,
                step_id="a",
                row_key=str(n),  # a migration's rows
                disposition=Disposition.CONFIRMED,
                counts_write=n % 3 != 0,
            )
            for n in range(1, ROWS + 1)
        ],
        batch_size=1_000,
    )
    ProcessRun.objects.filter(pk=run.pk).update(
        state="running",
        started_at=timezone.now() - timedelta(minutes=1),
        lease_owner="dead",
        lease_until=timezone.now() - timedelta(seconds=1),
        writes=writes,
        **columns,
    )


@pytest.fixture
def run(admin_user, alice) -> ProcessRun:
    deploy(ONE_STEP, by=admin_user)
    return invoke("t:one", {}, alice)


def test_a_claim_reads_one_row_of_a_long_ledger(run):
    _left_by_a_dead_delivery(run, writes=WRITES)
    assert_writes_counted(run.pk)
    with CaptureQueriesContext(connection) as queries:
        claimed, _lease = run_claim(str(run.pk), 1)
    assert (claimed.writes, sequence_next(claimed)) == (WRITES, ROWS + 1)
    if connection.vendor != "postgresql":
        return  # SQLite counts the ledger (``writes_kept``)
    # The claim's UPDATE, then the position: one row of the ledger, nothing counted.
    assert len(queries) == 2
    position = queries.captured_queries[1]["sql"]
    assert "COUNT(" not in position.upper()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE process_run_step")
        cursor.execute(f"EXPLAIN {position}")
        plan = "\n".join(line for (line,) in cursor.fetchall())
    assert "Index" in plan and "Seq Scan" not in plan, plan
    assert "Limit" in plan, plan


def test_a_claim_of_a_run_with_a_cancel_request_counts_its_ledger(run):
    # A group cut by a cancel writes its first row with the whole group's count: until an ending
    # clears the request, the column may say more than the ledger holds.
    _left_by_a_dead_delivery(run, writes=WRITES + 15, cancel_requested=True)
    claimed, _lease = run_claim(str(run.pk), 1)
    assert (claimed.writes, sequence_next(claimed)) == (WRITES, ROWS + 1)


def test_assert_writes_counted_fails_on_a_column_that_drifted(run):
    _left_by_a_dead_delivery(run, writes=WRITES + 1)
    with pytest.raises(AssertionError, match="writes column"):
        assert_writes_counted(run.pk)


def test_a_ledger_row_written_without_a_lease_moves_the_run_writes_with_it(run):
    planned = PlannedStep("a", ("steps", 0), {"id": "a", "recordType": "legacy_customer"})
    ledger_position_empty(run)
    ledger_write(run, planned, disposition=Disposition.CONFIRMED, counts_write=True)
    ledger_write(run, planned, disposition=Disposition.SKIPPED, row_key="next")
    assert (run.writes, run.ledger.count()) == (1, 2)
    assert_writes_counted(run.pk)


def test_a_cancel_ending_a_dead_delivery_s_run_leaves_the_ledger_s_count(run):
    # The same cut group, then its run cancelled with no worker on it (no lease to count with):
    # the ending takes the ledger's count, so a later claim (a rollback's, say) may trust it.
    _left_by_a_dead_delivery(run, writes=WRITES + 15, cancel_requested=True)
    ended = run_stop(run.pk, actor=None, reason="stopped")
    assert (ended.state, ended.writes) == ("cancelled", WRITES)
    assert_writes_counted(run.pk)
