"""Sleep steps over HTTP with real workers: a run parks ``awaitingTime`` holding no worker, shows
``wakeAt``, and goes on once that time has come (never before); a cluster killed while the run
sleeps loses nothing; and a lane full of sleepers still commits a new run."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from processes.models import ProcessRun
from records.models import Record
from tests.conftest import client_for
from tests.processes.engine_support import deploy, ledger
from tests.processes.sleep_support import sleeper
from tests.workers import QCluster, wait_until

pytestmark = [pytest.mark.workers, pytest.mark.django_db(transaction=True)]

TERMINAL = ["committed", "failed", "rolled_back", "cancelled"]


def _invoke(client: APIClient, memo: str, process_id: str = "t:nap") -> str:
    res = client.post(f"/v1/processes/{process_id}", {"memo": memo}, format="json")
    assert res.status_code == 202, res.content
    return res.json()["runId"]


def _sleeping(run_id: str) -> bool:
    return ProcessRun.objects.filter(pk=run_id, pending_reason="awaitingTime").exists()


def _ended(run_id: str) -> ProcessRun | None:
    return ProcessRun.objects.filter(pk=run_id, state__in=TERMINAL).first()


def test_a_sleep_parks_shows_wake_at_and_goes_on_after_it_not_before(admin_user, alice, tmp_path):
    deploy(sleeper(sleep="'3s'"), by=admin_user)
    api = client_for(alice)
    with QCluster(workers=2, log_path=tmp_path / "q.log"):
        run_id = _invoke(api, "M-1")
        wait_until(lambda: _sleeping(run_id), timeout=60, message="the run parked on its sleep")
        parked = ProcessRun.objects.get(pk=run_id)
        read = api.get(f"/v1/processes/runs/{run_id}").json()["run"]
        if read["state"] == "running":  # (it could have woken already on a very slow machine)
            assert (read["pendingReason"], parked.lease_owner) == ("awaitingTime", "")
            assert read["wakeAt"] == parked.wait_deadline.isoformat().replace("+00:00", "Z")
        wait_until(lambda: _ended(run_id), timeout=60, message="the run ended")
    run = ProcessRun.objects.get(pk=run_id)
    assert run.state == "committed", run.reason
    assert ledger(run) == [("nap", "confirmed", None), ("after", "confirmed", None)]
    nap = run.ledger.get(step_id="nap")
    assert nap.created_at >= parked.wait_deadline  # recorded when due, not early
    assert nap.answer == {"wakeAt": parked.wait_deadline.isoformat()}
    assert Record.reads.get(record_type="salesOrder").fields["memo"].startswith("M-1 woke ")


def test_a_cluster_killed_while_the_run_sleeps_loses_nothing(admin_user, alice, tmp_path):
    deploy(sleeper(sleep="'2s'"), by=admin_user)
    log = tmp_path / "q.log"
    first = QCluster(workers=2, log_path=log).start()
    try:
        run_id = _invoke(client_for(alice), "M-2")
        wait_until(lambda: _sleeping(run_id), timeout=60, message="the run parked on its sleep")
    finally:
        first.kill()
    due = ProcessRun.objects.get(pk=run_id).wait_deadline
    wait_until(lambda: timezone.now() > due, timeout=30, message="the wake time passed")
    assert _ended(run_id) is None  # nobody to wake it: it waits for a worker, time kept
    with QCluster(workers=2, log_path=log):
        wait_until(lambda: _ended(run_id), timeout=60, message="the run ended")
    run = ProcessRun.objects.get(pk=run_id)
    assert run.state == "committed", run.reason
    assert ledger(run) == [("nap", "confirmed", None), ("after", "confirmed", None)]
    assert run.ledger.get(step_id="nap").answer == {"wakeAt": due.isoformat()}
    assert Record.reads.filter(record_type="salesOrder").count() == 1


SLEEPERS_PARKED_BY_WORKERS = 20
SLEEPERS_MORE = 1000


def test_a_lane_full_of_sleepers_holds_no_worker_and_a_new_run_commits(admin_user, alice, tmp_path):
    deploy(sleeper(sleep="'1h'"), by=admin_user)
    deploy(sleeper("t:quick", sleep="'1s', when: () => false"), by=admin_user, name="p/q.ts")
    api = client_for(alice)
    with QCluster(workers=2, log_path=tmp_path / "q.log"):
        ids = [_invoke(api, f"S-{n}") for n in range(SLEEPERS_PARKED_BY_WORKERS)]
        wait_until(
            lambda: (
                ProcessRun.objects.filter(pk__in=ids, pending_reason="awaitingTime").count()
                == len(ids)
            ),
            timeout=120,
            message="every sleeper parked",
        )
        # A thousand more exactly as the engine parks one (copies of a parked row): the lane's
        # workers (two) are far fewer than the sleepers, so none of them can be holding one.
        parked = ProcessRun.objects.get(pk=ids[0])
        clones = []
        for _ in range(SLEEPERS_MORE):
            clone = ProcessRun.objects.get(pk=parked.pk)
            clone.pk = None
            clone.run_id = uuid.uuid4()
            clones.append(clone)
        ProcessRun.objects.bulk_create(clones, batch_size=500)
        total = SLEEPERS_PARKED_BY_WORKERS + SLEEPERS_MORE
        assert ProcessRun.objects.filter(pending_reason="awaitingTime", lease_owner="").count() == (
            total
        )
        quick = _invoke(api, "now", "t:quick")
        wait_until(lambda: _ended(quick), timeout=60, message="the new run ended")
        assert ProcessRun.objects.get(pk=quick).state == "committed"
        still = ProcessRun.objects.filter(process_id="t:nap", pending_reason="awaitingTime")
        assert still.count() == total  # every sleeper still asleep, none woken early
        assert all(
            at > timezone.now() + timedelta(minutes=50)
            for at in still.values_list("wake_at", flat=True)
        )
