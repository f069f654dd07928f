"""A real outbound worker SIGKILLed in the middle of a run of writes it was sending to the sandbox.

The sandbox answers a run in one transaction with the worker's verdicts folded inside it, so the
run the kill cut short left nothing behind: a fresh worker sends it whole, and every write reached
the source exactly once, in commit order, with one document and one number each.
"""

from __future__ import annotations

from records.boundary import record_create
from records.models import Record, RecordWriteState
from records.trail import Actor
from sources.models import SandboxCounter, SandboxDocument, SandboxSend
from sources.outbound_run import RUN_MAX
from sources.scripting import sandbox_script_set
from sources.wakeups import outbound_enqueue
from tests.workers import QCluster, outbound_settled_wait, postgres_workers, wait_until

pytestmark = postgres_workers(
    "on SQLite the test's polling read saw no run commit before the last one (the "
    "worker's run holds the database's write lock), so the kill cannot be aimed mid-run; "
    "the run's one transaction is the same code, tested in-process on SQLite"
)

WRITES = 6 * RUN_MAX
FAST_LANE = {"TURBOBASE_SOURCES_LANE_LEASE_S": "3"}  # a killed drain's lane frees in seconds


def _sent() -> list[int]:
    return list(
        SandboxSend.objects.filter(record_type="customer")
        .order_by("started_at", "id")
        .values_list("write_state_id", flat=True)
    )


def test_a_worker_killed_mid_run_leaves_nothing_sent_twice_or_lost(alice, tmp_path):
    # 30 ms a write: a run of 32 takes about a second, long enough for the kill to land inside one.
    sandbox_script_set("customer", latency_ms=30)
    actor = Actor(user=alice)
    for i in range(WRITES):
        record_create(actor=actor, record_type="customer", parent={"company_name": f"C{i}"})
    with QCluster(workers=2, log_path=tmp_path / "a.log", extra_env=FAST_LANE) as first:
        outbound_enqueue(record_type="customer")
        # The first run committed (its sends are logged with it): the worker is inside the next.
        wait_until(lambda: len(_sent()) >= RUN_MAX, timeout=60, message="the first run answered")
        first.kill()
    sent_at_kill = len(_sent())
    assert sent_at_kill < WRITES, "the kill came after the last run"
    assert sent_at_kill % RUN_MAX == 0  # whole runs only: the one cut short left no send behind

    with QCluster(workers=2, log_path=tmp_path / "b.log", extra_env=FAST_LANE):
        outbound_settled_wait()

    writes = list(
        RecordWriteState.reads.filter(record_type="customer")
        .order_by("id")
        .values_list("id", flat=True)
    )
    assert _sent() == writes  # in commit order, each exactly once
    assert set(RecordWriteState.reads.values_list("status", flat=True)) == {"confirmed"}
    assert SandboxDocument.objects.count() == WRITES  # nothing created twice upstream
    assert SandboxCounter.objects.get(prefix="CUS").next_number == 1041 + WRITES  # no number lost
    assert sorted(Record.reads.values_list("external_id", flat=True)) == sorted(
        f"CUS-{1041 + i}" for i in range(WRITES)
    )
