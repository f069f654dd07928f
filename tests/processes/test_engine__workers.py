"""The engine in real django-q2 workers: lanes, and the SIGKILL durability test."""

from __future__ import annotations

import pytest

from processes.invoke import run_invoke
from processes.models import ProcessRun
from records.models import Record
from tests.processes.engine_support import deploy, slow_chain
from tests.workers import QCluster, wait_until

pytestmark = [pytest.mark.workers, pytest.mark.django_db(transaction=True)]

STEPS = 6
FAST_LEASE = {
    "TURBOBASE_RUN_LEASE_S": "3",
    "TURBOBASE_TASK_TIMEOUT": "20",
    "TURBOBASE_TASK_RETRY": "8",
}


def _terminal(run_ids) -> bool:
    return ProcessRun.objects.filter(
        pk__in=run_ids, state__in=["committed", "failed", "rolled_back", "cancelled"]
    ).count() == len(run_ids)


def test_a_worker_killed_mid_run_resumes_and_writes_nothing_twice(admin_user, alice, tmp_path):
    deploy(slow_chain("t:slow-chain", steps=STEPS, step_ms=120, numbered=True), by=admin_user)
    run_ids = [run_invoke(process_id="t:slow-chain", body={}, user=alice).pk for _ in range(4)]
    cluster = QCluster(workers=2, log_path=tmp_path / "q.log", extra_env=FAST_LEASE)
    for kill_after in (3, 10):
        cluster.start()
        wait_until(
            lambda kill_after=kill_after: Record.reads.count() >= kill_after,
            timeout=60,
            message=f"{kill_after} records",
        )
        cluster.kill()
    with cluster:
        wait_until(lambda: _terminal(run_ids), timeout=120, message="every run terminal")
    runs = ProcessRun.objects.filter(pk__in=run_ids)
    assert sorted(runs.values_list("state", flat=True)) == ["committed"] * 4
    for run in runs:
        steps = list(run.ledger.order_by("sequence").values_list("step_id", "disposition"))
        assert steps == [(f"s{n}", "confirmed") for n in range(STEPS)], steps
        created = Record.reads.filter(fields__run=str(run.pk))
        assert created.count() == STEPS
        assert sorted(r.fields["step"] for r in created) == list(range(STEPS))
    assert Record.reads.count() == 4 * STEPS


def test_the_seed_chain_runs_in_the_lanes_with_the_sandbox_source(admin_user, alice, tmp_path):
    from pathlib import Path

    fixture = (
        Path(__file__).parent.parent
        / "extensions"
        / "fixtures"
        / "processes"
        / "raise-po-and-bill.ts"
    )
    deploy(fixture.read_text(), by=admin_user)
    with QCluster(workers=2, log_path=tmp_path / "q.log"):
        sync_run = run_invoke(
            process_id="acme:raise-po-and-bill",
            body={"vendorId": "V", "amount": 1},
            user=alice,
            mode="sync",
        )
        async_run = run_invoke(
            process_id="acme:raise-po-and-bill", body={"vendorId": "W", "amount": 2}, user=alice
        )
        wait_until(
            lambda: _terminal([sync_run.pk, async_run.pk]), timeout=60, message="both runs terminal"
        )
    for run in (sync_run, async_run):
        run.refresh_from_db()
        assert run.state == "committed", run.reason
        po, bill = run.ledger.order_by("sequence")
        assert Record.reads.get(pk=bill.pg_row_id).fields["created_from_id"] == po.external_id
    from django_q.models import Task

    lanes = set(
        Task.objects.filter(func="processes.tasks.run_deliver").values_list("cluster", flat=True)
    )
    assert {"tb_sync", "tb_async"} <= lanes


def test_sync_invoke_over_http_is_answered_by_the_sync_lane_workers(admin_user, alice, tmp_path):
    from pathlib import Path

    from rest_framework.test import APIClient

    fixture = (
        Path(__file__).parent.parent
        / "extensions"
        / "fixtures"
        / "processes"
        / "raise-po-and-bill.ts"
    )
    deploy(fixture.read_text(), by=admin_user)
    client = APIClient()
    client.force_authenticate(user=alice)
    with QCluster(workers=2, log_path=tmp_path / "q.log"):
        answer = client.post(
            "/v1/processes/acme:raise-po-and-bill?mode=sync",
            {"vendorId": "V-3", "amount": 5},
            format="json",
        )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert (body["state"], body["reason"], body["outstanding"]) == ("committed", None, 0)
    po, bill = body["steps"]
    assert po["externalId"].startswith("PO-") and po["disposition"] == "confirmed"
    assert Record.reads.get(pk=bill["pgRowId"]).fields["created_from_id"] == po["externalId"]
    run = ProcessRun.objects.get(pk=body["runId"])
    assert (run.mode, run.invoked_by) == ("sync", alice)
