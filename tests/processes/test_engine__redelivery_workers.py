"""No run stranded, none run twice: worker clusters SIGKILLed at random moments, on each broker.

A cluster killed mid-stream loses what it had taken from the broker (Redis forgets a taken
task; the ORM broker would hand it out again only after the task retry, set far away here) and
leaves leases on the runs it was working. The lanes' redelivery watch sends those deliveries
again within the lease; the ledger and the boundary's idempotency keys keep every write single,
here and upstream (the sandbox source honours the key a re-sent create carries).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import pytest
from django.db.models import Count
from django_q.models import Task

from processes.invoke import run_invoke
from processes.models import ProcessRun
from records.models import Record, RecordWriteState, WriteStatus
from sources.models import SandboxDocument
from tests.processes.engine_support import deploy
from tests.workers import QCluster, outbound_settled_wait, redis_broker, wait_until

pytestmark = [pytest.mark.workers, pytest.mark.django_db(transaction=True)]

LEASE_S = 3
RECOVERY_SLACK_S = 30  # the lanes working off what is left on a loaded 2-core machine
FAST = {
    "TURBOBASE_RUN_LEASE_S": str(LEASE_S),
    "TURBOBASE_SOURCES_LANE_LEASE_S": "3",
    "TURBOBASE_TASK_TIMEOUT": "60",
    "TURBOBASE_TASK_RETRY": "900",  # the ORM broker's own redelivery: far beyond this test
    "LOG_LEVEL": "INFO",  # django-q2 says when each lane's cluster runs
}
TWO_CUSTOMERS = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:two-customers',
  input: { type: 'object' },
  steps: [
    { id: 'a', recordType: 'customer', build: (ctx) => {
        const until = Date.now() + 40; while (Date.now() < until) { /* widen the window a kill lands in */ }
        return { parent: { company_name: `a ${ctx.runId}` } };
      } },
    { id: 'b', recordType: 'customer', build: (ctx) => ({ parent: { company_name: `b ${ctx.runId}` } }) },
  ],
});
"""
TERMINAL = ["committed", "failed", "rolled_back", "cancelled"]


@pytest.fixture(params=["orm", "redis"])
def broker(request) -> Iterator[dict[str, str]]:
    """The broker this test process enqueues on, and the environment that gives its clusters the same."""
    if request.param == "orm":
        yield {}
        return
    with redis_broker() as env:
        yield env


def _terminal(run_ids) -> int:
    return ProcessRun.objects.filter(pk__in=run_ids, state__in=TERMINAL).count()


def assert_each_write_once(run_ids) -> None:
    """Every run committed with one ledger row per step, one record per step, one upstream document each."""
    runs = ProcessRun.objects.filter(pk__in=run_ids)
    assert dict(runs.values_list("state").annotate(n=Count("pk"))) == {"committed": len(run_ids)}
    for run in runs:
        assert list(run.ledger.order_by("sequence").values_list("step_id", "disposition")) == [
            ("a", "confirmed"),
            ("b", "confirmed"),
        ], run.pk
        assert run.writes == 2
    names = sorted(Record.reads.values_list("fields__company_name", flat=True))
    assert names == sorted(f"{step} {run_id}" for run_id in run_ids for step in "ab")
    settled_s = outbound_settled_wait()
    print(f"every outbound write settled {settled_s:.1f}s after the runs ended")
    assert set(RecordWriteState.reads.values_list("status", flat=True)) == {WriteStatus.CONFIRMED}
    upstream = sorted(SandboxDocument.objects.values_list("fields__company_name", flat=True))
    assert upstream == names  # nothing created twice upstream
    linked = set(Record.reads.values_list("external_id", flat=True))
    assert linked == set(SandboxDocument.objects.values_list("external_id", flat=True))


def test_runs_survive_clusters_killed_at_random_moments(broker, admin_user, alice, tmp_path):
    deploy(TWO_CUSTOMERS, by=admin_user)
    rng = random.Random()
    cluster = QCluster(workers=2, log_path=tmp_path / "q.log", extra_env={**FAST, **broker}).start()
    modes = ["sync", "async", "async", "async"]
    run_ids = [
        run_invoke(process_id="t:two-customers", body={}, user=alice, mode=modes[n % 4]).pk
        for n in range(200)
    ]
    kills = []
    # Kill as the stream passes these shares, at a random moment after; the next kill may come
    # while the restarted cluster is still starting.
    for share in (0.2, 0.5, 0.8, 0.95):
        wait_until(
            lambda share=share: _terminal(run_ids) >= share * len(run_ids),
            timeout=180,
            interval=0.02,
            message=f"{share:.0%} of runs terminal",
        )
        time.sleep(rng.uniform(0, 0.2))
        cluster.kill()
        running = ProcessRun.objects.filter(pk__in=run_ids, state="running").count()
        kills.append((time.monotonic(), _terminal(run_ids), running))
        lanes_before = cluster.lanes_running()  # a killed cluster logs nothing more
        cluster.start(wait=False)
    last_kill = kills[-1][0]
    try:
        wait_until(
            lambda: cluster.lanes_running() >= lanes_before + 3,  # the all-lanes qcluster: three
            timeout=120,
            message="the lanes running again",
        )
        up_s = time.monotonic() - last_kill  # the restarted cluster's start-up on this machine
        wait_until(
            lambda: _terminal(run_ids) == len(run_ids),
            timeout=LEASE_S + 10 + 60,
            interval=0.1,
            message="every run terminal",
        )
        recovered_s = time.monotonic() - last_kill
        print(
            f"\n{broker.get('TURBOBASE_BROKER', 'orm')}: kills at (terminal, running) "
            f"{[(done, running) for _, done, running in kills]}; lanes running again {up_s:.1f}s after the "
            f"last kill; every run terminal {recovered_s:.1f}s after it ({recovered_s - up_s:.1f}s after start-up)"
        )
        # The lease runs out, the watch looks, the rest runs. Not a speed test: the bound only
        # tells "sent again within the lease" (seconds) from the broker's retry (16 min on the ORM
        # broker) or never (Redis); the printed figures are what to read. Measured from the
        # restarted lanes running: their start-up is the machine's, not the engine's.
        assert recovered_s - up_s <= LEASE_S + RECOVERY_SLACK_S
        assert_each_write_once(run_ids)
    finally:
        cluster.stop()
    assert any(running for _, _, running in kills), "no kill caught a run in a worker's hands"
    assert kills[-1][1] < len(run_ids), "the last kill came after the last run"


def test_a_step_longer_than_the_lease_keeps_its_run(admin_user, alice, tmp_path):
    # One step spending about twice the lease (a 1 s lease; each call stays under its 1 s CPU budget).
    deploy(
        """import { defineProcess } from '@turbobase/extensions';
const spin = (ms) => { const until = Date.now() + ms; while (Date.now() < until) { /* work */ } };
export default defineProcess({
  id: 't:long-step',
  input: { type: 'object' },
  steps: [
    { id: 'long', recordType: 'legacy_customer',
      when: () => { spin(900); return true; },
      build: (ctx) => { spin(900); return { parent: { run: ctx.runId } }; } },
  ],
});
""",
        by=admin_user,
    )
    with QCluster(
        workers=2, log_path=tmp_path / "q.log", extra_env={**FAST, "TURBOBASE_RUN_LEASE_S": "1"}
    ):
        run = run_invoke(process_id="t:long-step", body={}, user=alice)
        sent_at = ProcessRun.objects.get(pk=run.pk).enqueued_at
        wait_until(lambda: _terminal([run.pk]) == 1, timeout=60, message="the run terminal")
    run.refresh_from_db()
    assert (run.state, run.reason, run.delivery, run.writes) == ("committed", None, 1, 1)
    assert (
        run.enqueued_at == sent_at
    )  # the watch never saw its lease run out, so never sent it again
    tasks = Task.objects.filter(func="processes.tasks.run_deliver")
    deliveries = [task for task in tasks if task.args[0] == str(run.pk)]
    assert len(deliveries) == 1
    assert list(run.ledger.values_list("step_id", "disposition")) == [("long", "confirmed")]
    assert Record.reads.filter(fields__run=str(run.pk)).count() == 1
