"""The run page: summary, timeline, paginated ledger, and Cancel / Resume / Roll back behind a
confirmation page each."""

from __future__ import annotations

import re
import uuid

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from processes.invoke import run_invoke
from processes.models import PendingReason, ProcessRun, ProcessRunStep, RunState
from processes.timeline import MAX_BARS
from tests.conftest import make_user
from tests.processes.conftest import FAILS_AT_SECOND, drain_runs
from tests.processes.ledger_support import run_with_ledger

pytestmark = pytest.mark.django_db

RUNS = "/admin/processes/processrun/"
PAGE_BOUND = 400 * 1024


def _page(operator: Client, run: ProcessRun, query: str = "") -> str:
    res = operator.get(f"{RUNS}{run.run_id}/change/{query}")
    assert res.status_code == 200
    return res.content.decode()


def test_a_5000_step_run_page_is_under_400_kb_with_100_ledger_rows_and_200_bars(operator):
    run = run_with_ledger("acme:big", 5000)
    res = operator.get(f"{RUNS}{run.run_id}/change/")
    assert res.status_code == 200
    assert len(res.content) < PAGE_BOUND, len(res.content)
    page = res.content.decode()
    assert page.count('<tr class="row') == 100
    assert "steps 1–100 of 5000" in page
    assert page.count('class="bar ') == MAX_BARS
    assert "each bar is 25 consecutive steps" in page
    # Every 50th step failed: every other bucket of 25 holds one failure and is drawn failed.
    assert page.count('class="bar failed"') == 100
    last = _page(operator, run, "?page=50")
    assert "steps 4901–5000 of 5000" in last and ">step-5000<" in last


def test_a_small_run_draws_one_bar_per_step_coloured_by_disposition_with_its_refusal(
    operator, alice, deploy
):
    deploy(FAILS_AT_SECOND, "fails.ts")
    run = run_invoke(process_id="acme:fails-at-second", body={}, user=alice)
    drain_runs()
    run.refresh_from_db()
    page = _page(operator, run)
    assert re.findall(
        r'class="bar (\w+)" style="left:[\d.]+%;width:[\d.]+%" title="#(\d) (\S+): ', page
    ) == [("confirmed", "1", "order"), ("failed", "2", "item")]
    assert "REQUIRED_FIELD_MISSING" in page and "legacy_id is required" in page
    assert 'id="run-state">failed<' in page
    assert 'id="run-duration">' in page and "Version: v1" in page
    step = run.ledger.get(sequence=1)
    assert f"/admin/records/record/{step.pg_row_id}/change/" in page
    assert 'name="_save"' not in page
    # Each ledger row carries when its step began, set by the engine before the step's code ran.
    for row in run.ledger.all():
        assert run.started_at <= row.started_at <= row.created_at


def test_a_step_bar_starts_when_its_step_started_not_where_the_step_before_ended(operator):
    run = run_with_ledger("acme:big", 3)  # rows 20 ms apart, each step began 10 ms before its row
    page = _page(operator, run)
    bars = [
        (float(left), float(width))
        for left, width in re.findall(
            r'class="bar \w+" style="left:([\d.]+)%;width:([\d.]+)%"', page
        )
    ]
    assert len(bars) == 3
    # 60 ms drawn: every step 10 ms of work, then 10 ms between it and the next — left blank.
    assert [round(left) for left, _ in bars] == [17, 50, 83]
    assert all(round(width) == 17 for _, width in bars)


def test_a_migration_run_marks_its_slices_and_a_parked_run_shows_its_wait_with_the_reason(operator):
    run = run_with_ledger(
        "acme:migrate",
        30,
        state=RunState.RUNNING,
        pending_reason=PendingReason.AWAITING_SOURCE,
        slice_rows=10,
    )
    ProcessRun.objects.filter(pk=run.pk).update(waiting_step="push-bill")
    page = _page(operator, run)
    assert [
        int(n) for n in re.findall(r'class="slice" style="left:[\d.]+%" title="slice (\d+)"', page)
    ] == [1, 2, 3]
    assert 'title="waiting (awaitingSource) at push-bill"' in page
    assert "so far" in page


def test_cancel_a_waiting_run_confirms_first_then_cancels_and_says_so(operator, alice, two_notes):
    run = run_invoke(process_id="acme:two-notes", body={"memo": "m"}, user=alice)
    ProcessRun.objects.filter(pk=run.pk).update(
        state=RunState.RUNNING, pending_reason=PendingReason.AWAITING_TIME
    )
    page = _page(operator, run)
    assert (
        'id="steer-cancel"' in page
        and 'id="steer-rollback"' not in page
        and 'id="steer-resume"' not in page
    )
    confirm = operator.get(f"{RUNS}{run.run_id}/steer/cancel/")
    assert confirm.status_code == 200
    assert "A queued run never executes" in confirm.content.decode()
    run.refresh_from_db()
    assert run.state == RunState.RUNNING  # the confirmation page changed nothing
    res = operator.post(f"{RUNS}{run.run_id}/steer/cancel/", follow=True)
    assert res.redirect_chain == [(f"{RUNS}{run.run_id}/change/", 302)]
    run.refresh_from_db()
    assert (run.state, run.reason) == (RunState.CANCELLED, "cancelled by root")
    page = res.content.decode()
    assert "Run cancelled: cancelled by root" in page
    assert 'id="steer-rollback"' in page


def test_rollback_and_resume_appear_only_where_the_state_table_allows(operator):
    committed = run_with_ledger("acme:big", 3)
    page = _page(operator, committed)
    assert (
        'id="steer-rollback"' in page
        and 'id="steer-cancel"' not in page
        and 'id="steer-resume"' not in page
    )
    ProcessRun.objects.filter(pk=committed.pk).update(outstanding=2)
    assert 'id="steer-resume"' in _page(operator, committed)
    rolled = run_with_ledger("acme:big", 3, state=RunState.ROLLED_BACK)
    assert "steer-" not in _page(operator, rolled)


def test_a_refused_steer_is_a_message_and_changes_nothing(operator):
    run = run_with_ledger(
        "acme:big", 3, state=RunState.RUNNING, pending_reason=PendingReason.RUNNING
    )
    res = operator.post(f"{RUNS}{run.run_id}/steer/rollback/", follow=True)
    assert (
        "Roll back refused: a run still running cannot be rolled back: cancel it first"
        in res.content.decode()
    )
    run.refresh_from_db()
    assert (run.state, run.rollback_requested) == (RunState.RUNNING, False)


def test_steering_needs_the_change_run_permission_and_unknown_actions_are_404(operator, db):
    run = run_with_ledger("acme:big", 3, state=RunState.QUEUED, pending_reason=PendingReason.QUEUED)
    viewer = make_user("viewer")
    viewer.is_staff = True
    viewer.save()
    viewer.user_permissions.add(Permission.objects.get(codename="view_processrun"))
    client = Client()
    client.force_login(viewer)
    assert "steer-" not in _page(client, run)
    assert client.post(f"{RUNS}{run.run_id}/steer/cancel/").status_code == 403
    assert operator.get(f"{RUNS}{run.run_id}/steer/explode/").status_code == 404
    run.refresh_from_db()
    assert run.state == RunState.QUEUED


def test_a_run_page_links_the_other_runs_that_wrote_its_records(operator):
    first = run_with_ledger("acme:migrate", 2)
    again = run_with_ledger("acme:migrate", 2)
    unrelated = run_with_ledger("acme:migrate", 1)
    shared = uuid.uuid4()
    ProcessRunStep.objects.filter(run__in=[first, again], sequence=1).update(pg_row_id=shared)
    page = _page(operator, again)
    assert f"/admin/records/record/{shared}/change/" in page
    linked = page[page.index("<h3>Linked runs</h3>") :]
    assert f"{RUNS}{first.run_id}/change/" in linked
    assert (
        f"{RUNS}{unrelated.run_id}/change/" not in linked
        and f"{RUNS}{again.run_id}/change/" not in linked
    )
