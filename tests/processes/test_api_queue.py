"""``GET /v1/processes/queue`` and ``GET /v1/processes``: all seven buckets, failures with their
runs, the lane filter, the process list's trigger, switch and last five runs — all scoped."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from extensions.models import ExtensionKind, ExtensionModule
from guardrails.settings import _rows, setting_set
from processes.api import reads
from processes.invoke import run_invoke
from processes.models import Process, ProcessRun, ProcessRunStep, RunState
from processes.schedules.models import ProcessSchedule
from processes.steering import run_cancel
from tests.processes.conftest import FAILS_AT_SECOND, drain_runs

pytestmark = pytest.mark.django_db

ZERO = {
    "queued": 0,
    "running": 0,
    "committed": 0,
    "failed": 0,
    "rolled_back": 0,
    "cancelled": 0,
    "refused": 0,
}


def test_an_empty_queue_reports_every_bucket(alice_api):
    res = alice_api.get("/v1/processes/queue")
    assert res.status_code == 200
    assert res.json() == {"runs": [], "counts": ZERO, "truncated": False}


def test_the_queue_carries_each_failure_with_its_run(alice, alice_api, deploy, two_notes):
    deploy(FAILS_AT_SECOND, "fails.ts")
    ok = run_invoke(process_id="acme:two-notes", body={"memo": "a"}, user=alice)
    bad = run_invoke(process_id="acme:fails-at-second", body={}, user=alice)
    drain_runs()
    waiting = run_invoke(process_id="acme:two-notes", body={"memo": "b"}, user=alice)
    stopped = run_invoke(process_id="acme:two-notes", body={"memo": "c"}, user=alice, mode="sync")
    run_cancel(user=alice, run_id=str(stopped.run_id))
    body = alice_api.get("/v1/processes/queue").json()
    assert body["counts"] == {**ZERO, "queued": 1, "committed": 1, "failed": 1, "cancelled": 1}
    assert body["truncated"] is False
    assert body["runs"] == [
        {
            "runId": str(stopped.run_id),
            "processId": "acme:two-notes",
            "mode": "sync",
            "state": "cancelled",
            "pendingReason": None,
            "outstanding": 2,
            "failure": None,
        },
        {
            "runId": str(waiting.run_id),
            "processId": "acme:two-notes",
            "mode": "async",
            "state": "queued",
            "pendingReason": "queued",
            "outstanding": 0,
            "failure": None,
        },
        {
            "runId": str(bad.run_id),
            "processId": "acme:fails-at-second",
            "mode": "async",
            "state": "failed",
            "pendingReason": None,
            "outstanding": 0,
            "failure": {
                "stepId": "item",
                "code": "REQUIRED_FIELD_MISSING",
                "message": "legacy_id is required",
            },
        },
        {
            "runId": str(ok.run_id),
            "processId": "acme:two-notes",
            "mode": "async",
            "state": "committed",
            "pendingReason": None,
            "outstanding": 0,
            "failure": None,
        },
    ]


PASSES_A_REFUSED_DELETE_THEN_FAILS = """\
import { defineProcess } from '@turbobase/extensions';

export default defineProcess({
  id: 'acme:passes-then-fails',
  input: { type: 'object' },
  steps: [
    { id: 'drop', recordType: 'salesOrder', onRefused: 'continue',
      delete: { pgRowId: (ctx) => '00000000-0000-4000-8000-000000000000' } },
    { id: 'item', recordType: 'migration_item', build: (ctx) => ({ parent: { note: 'no legacy id' } }) },
  ],
});
"""


def test_the_failure_names_the_step_that_ended_the_run_not_an_earlier_refusal_it_let_pass(
    alice, alice_api, deploy
):
    deploy(PASSES_A_REFUSED_DELETE_THEN_FAILS, "passes.ts")
    run = run_invoke(process_id="acme:passes-then-fails", body={}, user=alice)
    drain_runs()
    run.refresh_from_db()
    assert run.state == "failed"
    assert list(run.ledger.order_by("sequence").values_list("step_id", "disposition")) == [
        ("drop", "failed"),
        ("item", "failed"),
    ]
    failure = {
        "stepId": "item",
        "code": "REQUIRED_FIELD_MISSING",
        "message": "legacy_id is required",
    }
    [queued] = alice_api.get("/v1/processes/queue").json()["runs"]
    assert (queued["runId"], queued["failure"]) == (str(run.run_id), failure)
    [listed] = [
        p
        for p in alice_api.get("/v1/processes").json()["processes"]
        if p["id"] == "acme:passes-then-fails"
    ]
    assert listed["lastRuns"][0]["failure"] == failure


def test_mode_async_is_the_async_lane_alone(alice, alice_api, two_notes):
    run_invoke(process_id="acme:two-notes", body={"memo": "a"}, user=alice, mode="sync")
    lane = run_invoke(process_id="acme:two-notes", body={"memo": "b"}, user=alice)
    body = alice_api.get("/v1/processes/queue?mode=async").json()
    assert [r["runId"] for r in body["runs"]] == [str(lane.run_id)]
    assert body["counts"] == {**ZERO, "queued": 1}
    assert alice_api.get("/v1/processes/queue?mode=sync").json()["counts"] == {**ZERO, "queued": 1}


def test_an_unknown_queue_mode_is_400_invalid_mode(alice_api):
    res = alice_api.get("/v1/processes/queue?mode=fast")
    assert res.status_code == 400
    assert res.json()["error"] == "invalid_mode"


def test_the_queue_is_scoped_like_the_single_run_read(
    alice, bob, alice_api, bob_api, admin_api, two_notes
):
    run_invoke(process_id="acme:two-notes", body={"memo": "a"}, user=alice)
    run_invoke(process_id="acme:two-notes", body={"memo": "b"}, user=alice)
    theirs = run_invoke(process_id="acme:two-notes", body={"memo": "c"}, user=bob)
    bob_body = bob_api.get("/v1/processes/queue").json()
    assert [r["runId"] for r in bob_body["runs"]] == [str(theirs.run_id)]
    assert bob_body["counts"] == {**ZERO, "queued": 1}
    assert alice_api.get("/v1/processes/queue").json()["counts"] == {**ZERO, "queued": 2}
    assert admin_api.get("/v1/processes/queue").json()["counts"] == {**ZERO, "queued": 3}


def test_the_list_is_bounded_but_the_counts_are_not(alice, alice_api, admin_api, two_notes):
    # An instance setting (the shipped bound of 500 is the same code with more rows).
    res = admin_api.patch("/v1/settings", {"processes.queue_max_runs": 2}, format="json")
    assert res.status_code == 200
    runs = [
        run_invoke(process_id="acme:two-notes", body={"memo": str(i)}, user=alice) for i in range(3)
    ]
    body = alice_api.get("/v1/processes/queue").json()
    assert [r["runId"] for r in body["runs"]] == [str(runs[2].run_id), str(runs[1].run_id)]
    assert (body["counts"]["queued"], body["truncated"]) == (3, True)


def test_processes_lists_every_deployed_process_with_trigger_switch_and_last_five_runs(
    alice, bob, alice_api, bob_api, admin_api, deploy, two_notes
):
    deploy(FAILS_AT_SECOND, "fails.ts")
    mine = [
        run_invoke(process_id="acme:two-notes", body={"memo": str(i)}, user=alice) for i in range(6)
    ]
    theirs = run_invoke(process_id="acme:two-notes", body={"memo": "b"}, user=bob)
    failed = run_invoke(process_id="acme:fails-at-second", body={}, user=alice)
    drain_runs()
    Process.objects.filter(pk="acme:fails-at-second").update(
        is_enabled=False, disabled_reason="under repair"
    )
    res = alice_api.get("/v1/processes")
    assert res.status_code == 200
    fails, notes = res.json()["processes"]
    assert {
        k: fails[k]
        for k in ("id", "trigger", "enabled", "disabledReason", "isMigration", "description")
    } == {
        "id": "acme:fails-at-second",
        "trigger": {"kind": "manual"},
        "enabled": False,
        "disabledReason": "under repair",
        "isMigration": False,
        "description": "",
    }
    assert [(r["runId"], r["state"], r["failure"]) for r in fails["lastRuns"]] == [
        (
            str(failed.run_id),
            "failed",
            {
                "stepId": "item",
                "code": "REQUIRED_FIELD_MISSING",
                "message": "legacy_id is required",
            },
        )
    ]
    assert (notes["id"], notes["enabled"], notes["disabledReason"], notes["description"]) == (
        "acme:two-notes",
        True,
        None,
        "Two sales orders, the second naming the first",
    )
    assert [r["runId"] for r in notes["lastRuns"]] == [str(r.run_id) for r in reversed(mine[1:])]
    assert set(notes["lastRuns"][0]) == {
        "runId",
        "processId",
        "mode",
        "state",
        "pendingReason",
        "outstanding",
        "failure",
        "reason",
        "startedAt",
        "finishedAt",
    }
    bob_notes = bob_api.get("/v1/processes").json()["processes"][1]
    assert [r["runId"] for r in bob_notes["lastRuns"]] == [str(theirs.run_id)]
    admin_notes = admin_api.get("/v1/processes").json()["processes"][1]
    assert admin_notes["lastRuns"][0]["runId"] == str(theirs.run_id)
    assert len(admin_notes["lastRuns"]) == 5


def test_processes_show_the_instance_switch(alice_api, two_notes):
    setting_set("processes.enabled", 0)
    (notes,) = alice_api.get("/v1/processes").json()["processes"]
    assert (notes["enabled"], notes["disabledReason"]) == (
        False,
        "every process on the instance is switched off (processes.enabled)",
    )


def test_a_trigger_provider_answers_for_a_scheduled_process(alice_api, two_notes):
    def provider(process_id: str):
        return (
            {"kind": "schedule", "cron": "0 6 * * *", "timezone": "Europe/Paris"}
            if process_id == "acme:two-notes"
            else None
        )

    reads.trigger_provider_register(provider)
    try:
        (notes,) = alice_api.get("/v1/processes").json()["processes"]
    finally:
        reads._trigger_providers.remove(provider)
    assert notes["trigger"] == {"kind": "schedule", "cron": "0 6 * * *", "timezone": "Europe/Paris"}


def _deployed(count: int, *, first: int, user) -> None:
    """``count`` deployed processes (module rows), each with a schedule, seven runs and, for the
    newest of them, a failure on its ledger."""
    ids = [f"acme:p{n:03d}" for n in range(first, first + count)]
    ExtensionModule.objects.bulk_create(
        [
            ExtensionModule(id=pid, kind=ExtensionKind.PROCESS, version=1, definition={})
            for pid in ids
        ]
    )
    ProcessSchedule.objects.bulk_create(
        [
            ProcessSchedule(
                name=f"{pid}-nightly",
                schedule_expr="0 2 * * *",
                process_id=pid,
                body={"kind": "process", "process": pid},
                schedule_tz="Europe/Paris",
            )
            for pid in ids
        ]
    )
    runs = ProcessRun.objects.bulk_create(
        [
            ProcessRun(
                process_id=pid,
                state=RunState.FAILED if k == 6 else RunState.COMMITTED,
                failed_sequence=1 if k == 6 else None,
                module_version=1,
                invoked_by=user,
            )
            for pid in ids
            for k in range(7)
        ]
    )
    base = timezone.now() - timedelta(hours=1)
    for k, run in enumerate(runs):  # created_at is auto_now_add: a minute apart, the failed newest
        run.created_at = base + timedelta(minutes=k % 7)
    ProcessRun.objects.bulk_update(runs, ["created_at"])
    ProcessRunStep.objects.bulk_create(
        [
            ProcessRunStep(
                run=run,
                sequence=1,
                step_id="item",
                record_type="note",
                disposition="failed",
                refusal_code="REQUIRED_FIELD_MISSING",
                refusal_message="legacy_id is required",
            )
            for run in runs
            if run.state == RunState.FAILED
        ]
    )


def test_processes_cost_the_same_queries_for_3_processes_as_for_12(alice, alice_api):
    def listed() -> tuple[int, list[dict]]:
        _rows.clear()  # the instance settings are cached between requests: read them each time
        with CaptureQueriesContext(connection) as queries:
            res = alice_api.get("/v1/processes")
        assert res.status_code == 200
        return len(queries.captured_queries), res.json()["processes"]

    _deployed(3, first=0, user=alice)
    three, body = listed()
    assert len(body) == 3
    _deployed(9, first=3, user=alice)
    twelve, body = listed()
    assert len(body) == 12
    assert twelve == three, (three, twelve)
    for process in body:  # every part of each row is there, read in the same few queries
        assert process["trigger"]["kind"] == "schedule"
        assert [r["state"] for r in process["lastRuns"]] == ["failed"] + ["committed"] * 4
        assert process["lastRuns"][0]["failure"] == {
            "stepId": "item",
            "code": "REQUIRED_FIELD_MISSING",
            "message": "legacy_id is required",
        }
