"""Scale out on Redis: two worker hosts (two separate ``qcluster`` process groups, every lane on
each), one killed mid-stream. Every run is committed once, and the writes of one record type
still reach the source one at a time and in commit order across both hosts."""

from __future__ import annotations

from contextlib import ExitStack
from itertools import groupby, pairwise

import pytest
from django.utils import timezone

from processes.invoke import run_invoke
from processes.models import ProcessRun
from records.models import Record, RecordWriteState
from sources.models import SandboxDocument, SandboxSend
from sources.scripting import sandbox_script_set
from tests.processes.engine_support import deploy
from tests.workers import QCluster, outbound_settled_wait, redis_broker, wait_until

pytestmark = [pytest.mark.workers, pytest.mark.django_db(transaction=True)]

RUNS = 60
HOST_ENV = {
    "TURBOBASE_RUN_LEASE_S": "3",
    "TURBOBASE_SOURCES_LANE_LEASE_S": "3",
    "TURBOBASE_TASK_TIMEOUT": "60",
}
ONE_CUSTOMER = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:one-customer',
  input: { type: 'object' },
  steps: [{ id: 'c', recordType: 'customer', build: (ctx) => {
    const until = Date.now() + 150; while (Date.now() < until) { /* a step that takes a while */ }
    return { parent: { company_name: ctx.runId } };
  } }],
});
"""


def _terminal(run_ids) -> int:
    ended = ["committed", "failed", "rolled_back", "cancelled"]
    return ProcessRun.objects.filter(pk__in=run_ids, state__in=ended).count()


def test_two_worker_hosts_one_killed_every_run_once_and_one_type_in_order(
    admin_user, alice, tmp_path
):
    deploy(ONE_CUSTOMER, by=admin_user)
    sandbox_script_set(
        "customer", latency_ms=20
    )  # long enough for two hosts to collide, if they could
    with redis_broker() as broker, ExitStack() as host_b:
        env = {**HOST_ENV, **broker}
        # Host a runs every lane in one qcluster (make run's way); host b runs each lane as its own
        # service (Q_CLUSTER_NAME, the production layout), so both ways of watching are exercised.
        host_a = QCluster(workers=2, log_path=tmp_path / "host-a.log", extra_env=env).start()
        host_b.callback(host_a.stop)  # if the test fails before the kill
        for lane in ("turbobase", "tb_sync", "tb_async"):
            host_b.enter_context(
                QCluster(
                    workers=2,
                    log_path=tmp_path / f"host-b-{lane}.log",
                    extra_env={**env, "Q_CLUSTER_NAME": lane},
                )
            )
        # Sends can begin seconds after the first runs end (a lane's first wake-up), by which time
        # a quiet machine has finished every run: a first wave until the sends are under way, then
        # the rest, so the kill lands with both runs and sends in hand.
        first_wave = 5
        run_ids = [
            run_invoke(process_id="t:one-customer", body={}, user=alice).pk
            for _ in range(first_wave)
        ]
        wait_until(
            SandboxSend.objects.exists, timeout=120, interval=0.05, message="the first send begun"
        )
        run_ids += [
            run_invoke(process_id="t:one-customer", body={}, user=alice).pk
            for _ in range(RUNS - first_wave)
        ]
        wait_until(
            lambda: _terminal(run_ids) >= RUNS // 3,
            timeout=120,
            interval=0.05,
            message="a third of the runs terminal",
        )
        host_a.kill()
        killed_at, terminal_at_kill = timezone.now(), _terminal(run_ids)
        wait_until(
            lambda: _terminal(run_ids) == RUNS, timeout=120, message="every run terminal on host b"
        )
        settled_s = outbound_settled_wait()
        print(f"every outbound write settled {settled_s:.1f}s after the runs ended")

    runs = ProcessRun.objects.filter(pk__in=run_ids)
    assert set(runs.values_list("state", flat=True)) == {"committed"}
    for run in runs:
        assert list(run.ledger.values_list("step_id", "disposition")) == [("c", "confirmed")]
    assert sorted(Record.reads.values_list("fields__company_name", flat=True)) == sorted(
        map(str, run_ids)
    )
    assert SandboxDocument.objects.count() == RUNS  # nothing created twice upstream

    writes = list(
        RecordWriteState.reads.filter(record_type="customer")
        .order_by("id")
        .values_list("id", flat=True)
    )
    sends = list(SandboxSend.objects.filter(record_type="customer").order_by("started_at", "id"))
    # In commit order across hosts: a write is sent again only right after its own first send
    # (the one a killed host had in hand), never after a later write.
    assert [write_id for write_id, _ in groupby(s.write_state_id for s in sends)] == writes
    for before, after in pairwise(
        sends
    ):  # one at a time: each send began after the one before ended
        ended = before.finished_at or killed_at  # a send the kill cut short ended with its host
        assert after.started_at >= ended, (before.write_state_id, after.write_state_id)
    print(
        f"\ntwo hosts: host a killed with {terminal_at_kill}/{RUNS} runs terminal and "
        f"{sum(s.started_at < killed_at for s in sends)}/{len(sends)} sends begun"
    )
    assert terminal_at_kill < RUNS, "the kill came after the last run"
    assert any(s.started_at > killed_at for s in sends), "the kill came after the last send"
