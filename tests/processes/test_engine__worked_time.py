"""The per-run runtime ceiling counts working time (``ProcessRun.worked_ms``): each delivery adds
the time it held the run as it lets go, and a run parked on a sleep uses none of it. The run's own
working time past the ceiling still stops it (``test_engine__steering.py``'s ceiling tests)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from guardrails.settings import setting_set
from processes.models import ProcessRun
from tests.processes.engine_support import deploy, invoke, ledger, pump
from tests.processes.sleep_support import sleeper

pytestmark = pytest.mark.django_db


def _asleep(admin_user, alice, *, sleep: str = "'1h'") -> ProcessRun:
    deploy(sleeper(sleep=sleep), by=admin_user)
    run = invoke("t:nap", {"memo": "M-1"}, alice)
    pump()
    run.refresh_from_db()
    assert (run.state, run.pending_reason) == ("running", "awaitingTime")
    return run


def _an_hour_on(run: ProcessRun) -> None:
    """The hour passes: the run started an hour earlier than it did, and its wake time is due."""
    past = timezone.now() - timedelta(seconds=1)
    ProcessRun.objects.filter(pk=run.pk).update(
        started_at=F("started_at") - timedelta(hours=1), wake_at=past, wait_deadline=past
    )


def test_a_sleep_longer_than_the_ceiling_commits_with_every_step_done(admin_user, alice):
    """Before: the hour asleep counted as runtime, so the run ended at its wake-up, stopped
    committed "at the per-run runtime ceiling processes.max_run_ms (2000 ms)" with 2 outstanding."""
    setting_set("processes.max_run_ms", 2000)
    run = _asleep(admin_user, alice)
    parked_worked = run.worked_ms
    assert 0 < parked_worked < 2000  # the first delivery's work, added as it parked
    _an_hour_on(run)
    pump()
    run.refresh_from_db()
    assert (run.state, run.outstanding, run.reason) == ("committed", 0, None)
    assert ledger(run) == [("nap", "confirmed", None), ("after", "confirmed", None)]
    assert parked_worked < run.worked_ms < 2000  # the wake-up's delivery added its own


def test_a_run_whose_working_time_is_spent_stops_at_its_next_delivery(admin_user, alice):
    setting_set("processes.max_run_ms", 2000)
    run = _asleep(admin_user, alice, sleep="'30s'")
    # Earlier deliveries worked it for the whole allowance (the sleep itself counts nothing).
    ProcessRun.objects.filter(pk=run.pk).update(worked_ms=2000)
    _an_hour_on(run)
    pump()
    run.refresh_from_db()
    assert (run.state, run.outstanding) == ("committed", 2)
    assert run.reason == "stopped at the per-run runtime ceiling processes.max_run_ms (2000 ms)"
    assert ledger(run) == []
    # The stopping delivery's own time is added too (whole milliseconds: often 0 for so short a one).
    assert run.worked_ms >= 2000


def test_the_admin_run_page_shows_the_working_time(admin_user, alice, client):
    run = _asleep(admin_user, alice)
    ProcessRun.objects.filter(pk=run.pk).update(worked_ms=1234)
    client.force_login(admin_user)
    page = client.get(reverse("admin:processes_processrun_change", args=[run.pk]))
    assert page.status_code == 200
    assert "Worked ms" in page.content.decode() and "1234" in page.content.decode()
