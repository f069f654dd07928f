"""``?mode=sync`` delivered on its own request (processes/sync_run.py): answered with no worker,
handed back to its lane past the budget, sent again by the watch if the web process dies, and
still answered through the settle notice (or the poll, on SQLite) when a worker runs it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_q.models import OrmQ

from guardrails.settings import setting_set
from processes.engine.claim import run_claim
from processes.engine.redelivery import redelivery_tick, runs_lost
from processes.engine.runner import run_deliver
from processes.invoke import run_invoke
from processes.models import ProcessRun
from records.models import Record
from tests.processes.conftest import drain_runs
from tests.processes.engine_support import slow_chain

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/v1/processes/acme:two-notes?mode=sync"


def _sync_lane_tasks() -> list[tuple[str, int]]:
    return [tuple(task.task["args"]) for task in OrmQ.objects.filter(key="tb_sync")]


def test_the_request_runs_its_sync_run_with_no_worker_and_hands_the_broker_nothing(
    alice_api, two_notes
):
    res = alice_api.post(URL, {"memo": "x"}, format="json")
    assert res.status_code == 200, res.content
    run = ProcessRun.objects.get()
    body = res.json()
    assert (body["runId"], body["state"], body["outstanding"]) == (str(run.run_id), "committed", 0)
    assert [s["stepId"] for s in body["steps"]] == ["first", "second"]
    assert (run.mode, run.state, run.lease_owner, run.lease_until) == (
        "sync",
        "committed",
        "",
        None,
    )
    assert Record.reads.count() == 2
    assert _sync_lane_tasks() == []


def test_with_the_request_path_off_a_worker_runs_it_and_the_request_answers_when_it_settles(
    alice_api, two_notes, inline_worker, settings
):
    settings.PROCESS_SYNC_IN_REQUEST = False
    res = alice_api.post(URL, {"memo": "x"}, format="json")
    assert res.status_code == 200, res.content
    assert (res.json()["state"], len(res.json()["steps"])) == ("committed", 2)
    assert ProcessRun.objects.get().state == "committed"


def test_past_the_budget_the_request_hands_the_run_to_its_lane_between_two_steps(alice_api, deploy):
    deploy(slow_chain("t:slow-three", steps=3, step_ms=300), "slow.ts")
    setting_set("processes.sync_budget_ms", 100)
    res = alice_api.post("/v1/processes/t:slow-three?mode=sync", {}, format="json")
    assert res.status_code == 202, res.content
    body = res.json()
    assert (body["error"], body["state"]) == ("sync_budget_exceeded", "queued")
    run = ProcessRun.objects.get(pk=body["runId"])
    # The first step (300 ms) outlasted the budget: the request stopped at the next boundary.
    assert (run.state, run.lease_owner, run.lease_until) == ("running", "", None)
    assert run.ledger.count() == 1
    assert _sync_lane_tasks() == [(str(run.pk), 1)]  # the same delivery, now the lane's
    drain_runs()
    run.refresh_from_db()
    assert (run.state, run.outstanding, run.delivery) == ("committed", 0, 1)
    assert Record.reads.filter(fields__run=str(run.pk)).count() == 3


def test_a_sync_run_whose_web_process_died_is_sent_to_its_lane_by_the_watch(
    alice, two_notes, settings
):
    settings.PROCESS_RUN_LEASE_S = 5
    # Died after the row committed, before its first step: as the request writes it, claimed by
    # the request in the same INSERT, its lease never renewed.
    before = run_invoke(
        process_id=two_notes,
        body={"memo": "a"},
        user=alice,
        mode="sync",
        send=False,
        claimed_by="a-request-that-died",
    )
    assert (before.state, before.pending_reason, before.lease_owner) == (
        "running",
        "running",
        "a-request-that-died",
    )
    # Written unclaimed and unsent (the request path's older shape, or a row nobody claimed).
    unclaimed = run_invoke(
        process_id=two_notes, body={"memo": "c"}, user=alice, mode="sync", send=False
    )
    # Died mid-run: its claim's lease is never renewed.
    during = run_invoke(
        process_id=two_notes, body={"memo": "b"}, user=alice, mode="sync", send=False
    )
    assert run_claim(str(during.pk), 1) is not None
    assert run_claim(str(before.pk), 1) is None  # its lease is live: nobody else takes it
    assert runs_lost(mode="sync") == []  # sent (noted) just now, and live leases
    long_ago = timezone.now() - timedelta(seconds=8)
    runs = (before, unclaimed, during)
    ProcessRun.objects.filter(pk__in=[run.pk for run in runs]).update(enqueued_at=long_ago)
    ProcessRun.objects.filter(pk__in=[before.pk, during.pk]).update(lease_until=long_ago)
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert redelivery_tick(mode="sync") == 3
    assert sorted(_sync_lane_tasks()) == sorted((str(run.pk), 1) for run in runs)
    for run in runs:
        run_deliver(str(run.pk), 1)
        run.refresh_from_db()
        assert (run.state, run.outstanding, run.lease_owner) == ("committed", 0, "")
        assert [row.step_id for row in run.ledger.order_by("sequence")] == ["first", "second"]
    assert Record.reads.count() == 6


def test_the_request_writes_its_run_claimed_and_reads_neither_the_run_nor_its_ledger_back(
    alice_api, two_notes
):
    """The row is inserted running and leased to the request: no claim UPDATE, no SELECT of the
    run or of its (empty) ledger before the steps."""
    with CaptureQueriesContext(connection) as queries:
        res = alice_api.post(URL, {"memo": "x"}, format="json")
    assert res.status_code == 200, res.content
    assert [s["stepId"] for s in res.json()["steps"]] == ["first", "second"]
    statements = [q["sql"] for q in queries.captured_queries]
    inserted = next(
        i for i, sql in enumerate(statements) if sql.startswith('INSERT INTO "process_run"')
    )
    first_step = next(
        i for i, sql in enumerate(statements) if '"record"' in sql and "INSERT" in sql
    )
    between = statements[inserted + 1 : first_step]
    assert not [sql for sql in between if '"process_run' in sql], between
    run = ProcessRun.objects.get()
    assert (run.state, run.slices, run.writes, run.lease_owner) == ("committed", 1, 2, "")
    assert run.started_at is not None and run.started_at <= run.finished_at
