"""Runs in state ``refused``: a scheduled (or triggered) run whose check failed before its first
step is kept, naming the field or the switch, and read like any other run — never queued, never
run. (An HTTP invoke keeps answering 4xx with no run: ``test_api_invoke``.)"""

from __future__ import annotations

import pytest

from guardrails.settings import setting_set
from processes.models import Process, ProcessRun
from processes.schedules.firing import schedules_fire_due
from tests.processes.conftest import drain_runs
from tests.processes.test_schedules_firing import DUE, NOTES, entry, module, schedule_deploy

pytestmark = pytest.mark.django_db
STRICT = NOTES % "'memo'"


def _scheduled_notes(admin_user, **body) -> None:
    schedule_deploy(admin_user, entry("acme:notes", **body), modules=(module("notes.ts", STRICT),))


def test_a_scheduled_run_with_input_the_schema_refuses_reads_refused_naming_the_field(
    admin_user, admin_api
):
    _scheduled_notes(admin_user, input={"memo": 7})
    [firing] = schedules_fire_due(DUE)
    assert drain_runs() == 0  # nothing was queued
    run = admin_api.get(f"/v1/processes/runs/{firing.run_id}").json()
    assert run["steps"] == []
    assert {
        key: run["run"][key] for key in ("state", "pendingReason", "schedule", "startedAt")
    } == {
        "state": "refused",
        "pendingReason": None,
        "schedule": "nightly",
        "startedAt": None,
    }
    assert run["run"]["refusal"] == {
        "code": "INPUT_INVALID",
        "field": "input.memo",
        "message": "input.memo: 7 is not of type 'string'",
    }
    assert run["run"]["reason"] == "input.memo: 7 is not of type 'string'"
    assert run["run"]["finishedAt"] is not None
    queue = admin_api.get("/v1/processes/queue", {"state": "refused"}).json()
    assert queue["counts"]["refused"] == 1
    assert queue["runs"] == [
        {
            "runId": str(firing.run_id),
            "processId": "acme:notes",
            "mode": "async",
            "state": "refused",
            "pendingReason": None,
            "outstanding": 0,
            "failure": {
                "stepId": None,
                "code": "INPUT_INVALID",
                "message": "input.memo: 7 is not of type 'string'",
            },
        }
    ]
    rest = admin_api.get(
        "/v1/rest/process_run",
        {"select": "state,refusal_code,refusal_field", "state": "eq.refused"},
    ).json()
    assert rest == [
        {"state": "refused", "refusal_code": "INPUT_INVALID", "refusal_field": "input.memo"}
    ]


@pytest.mark.parametrize(
    ("switch", "field", "reason"),
    [
        ("process", "acme:notes.enabled", "month-end freeze"),
        ("instance", "processes.enabled", "every process on the instance is switched off"),
    ],
)
def test_a_scheduled_run_of_a_switched_off_process_reads_refused_naming_the_switch(
    admin_user, admin_api, switch, field, reason
):
    _scheduled_notes(admin_user, input={"memo": "m"})
    if switch == "process":
        Process.objects.filter(pk="acme:notes").update(
            is_enabled=False, disabled_reason="month-end freeze"
        )
    else:
        setting_set("processes.enabled", 0)
    [firing] = schedules_fire_due(DUE)
    assert drain_runs() == 0
    run = admin_api.get(f"/v1/processes/runs/{firing.run_id}").json()["run"]
    assert (run["state"], run["refusal"]) == (
        "refused",
        {
            "code": "PROCESS_DISABLED",
            "field": field,
            "message": f"switched off ({field}): {reason}",
        },
    )
    # The process list shows it among the last runs, with the switch as its failure.
    processes = admin_api.get("/v1/processes").json()["processes"]
    [listed] = [p for p in processes if p["id"] == "acme:notes"]
    assert [(r["state"], r["failure"]["code"]) for r in listed["lastRuns"]] == [
        ("refused", "PROCESS_DISABLED")
    ]


def test_a_refused_run_is_ended_cancel_leaves_it_and_resume_or_rollback_are_409(
    admin_user, admin_api
):
    _scheduled_notes(admin_user, input={})
    [firing] = schedules_fire_due(DUE)
    url = f"/v1/processes/runs/{firing.run_id}"
    cancel = admin_api.post(f"{url}/cancel")
    assert (cancel.status_code, cancel.json()) == (
        200,
        {"runId": str(firing.run_id), "state": "refused"},
    )
    resume = admin_api.post(f"{url}/resume")
    assert (resume.status_code, resume.json()["error"]) == (409, "process_run_not_resumable")
    rollback = admin_api.post(f"{url}/rollback")
    assert (rollback.status_code, rollback.json()["message"]) == (
        409,
        "a refused run never ran: there is nothing to roll back",
    )
    run = ProcessRun.objects.get(pk=firing.run_id)
    assert (run.state, run.delivery, run.ledger.count()) == ("refused", 0, 0)


def test_the_run_page_shows_a_refused_run_with_its_reason_and_no_steering(admin_user, operator):
    _scheduled_notes(admin_user, input={"memo": 7})
    [firing] = schedules_fire_due(DUE)
    res = operator.get(f"/admin/processes/processrun/{firing.run_id}/change/")
    assert res.status_code == 200
    page = res.content.decode()
    assert "refused" in page and "input.memo: 7 is not of type &#x27;string&#x27;" in page
    assert [steer.name for steer in res.context["steers"]] == []
    listing = operator.get("/admin/processes/processrun/", {"state__exact": "refused"})
    assert listing.status_code == 200 and str(firing.run_id) in listing.content.decode()
