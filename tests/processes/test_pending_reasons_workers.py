"""``pendingReason`` with real workers: a run sent to a lane whose every worker is busy reads
``awaitingWorker`` (the lanes' watch marks it a second after it was sent) on the run read, the
queue and ``/v1/rest/process_run``, then ``running`` and ``committed`` once a worker is free."""

from __future__ import annotations

import pytest

from processes.models import ProcessRun
from tests.conftest import client_for
from tests.processes.engine_support import deploy, slow_chain
from tests.workers import QCluster, wait_until

pytestmark = [pytest.mark.workers, pytest.mark.django_db(transaction=True)]

ONE_ASYNC_WORKER = {"TURBOBASE_ASYNC_WORKERS": "1"}


def test_a_run_behind_a_busy_lane_reads_awaiting_worker_then_commits(admin_user, tmp_path):
    deploy(slow_chain("t:slow", steps=6, step_ms=800), by=admin_user)
    api = client_for(admin_user)
    with QCluster(workers=1, log_path=tmp_path / "q.log", extra_env=ONE_ASYNC_WORKER):
        first = api.post("/v1/processes/t:slow", {}, format="json").json()["runId"]
        wait_until(
            lambda: ProcessRun.objects.filter(pk=first, pending_reason="running").exists(),
            timeout=60,
            message="the first run in the lane's only worker",
        )
        second = api.post("/v1/processes/t:slow", {}, format="json").json()["runId"]
        wait_until(
            lambda: ProcessRun.objects.filter(pk=second, pending_reason="awaitingWorker").exists(),
            timeout=30,
            message="the second run marked awaitingWorker",
        )
        read = api.get(f"/v1/processes/runs/{second}").json()["run"]
        queue = api.get("/v1/processes/queue").json()["runs"]
        rest = api.get("/v1/rest/process_run", {"select": "run_id,pending_reason"}).json()
        both_ended = ProcessRun.objects.filter(pk__in=[first, second], state="committed")
        wait_until(lambda: both_ended.count() == 2, timeout=120, message="both runs committed")
    if ProcessRun.objects.get(pk=first).finished_at > ProcessRun.objects.get(pk=second).started_at:
        pytest.fail("the second run started before the lane's only worker was free")
    assert (read["state"], read["pendingReason"]) == ("queued", "awaitingWorker")
    by_id = {run["runId"]: run for run in queue}
    assert by_id[second]["pendingReason"] == "awaitingWorker"
    assert by_id[first]["pendingReason"] == "running"
    rows = {row["run_id"]: row["pending_reason"] for row in rest}
    assert rows[second] == "awaitingWorker"
    final = api.get(f"/v1/processes/runs/{second}").json()["run"]
    assert (final["state"], final["pendingReason"]) == ("committed", None)
