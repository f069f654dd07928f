"""The processes room's operator actions land in the audit trail, in the transaction that makes them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME

from kernel.audit import AuditEvent
from processes.invoke import run_invoke
from processes.models import Process, ProcessRun
from processes.schedules.firing import schedules_fire_due
from processes.schedules.models import ProcessSchedule
from tests.processes.conftest import drain_runs
from tests.processes.test_schedules_firing import DUE, NOTES, entry, module, schedule_deploy

pytestmark = pytest.mark.django_db

PROCESSES = "/admin/processes/process/"


def events(*actions: str) -> list[tuple]:
    rows = AuditEvent.objects.filter(action__in=actions).order_by("id")
    return [(e.actor_name, e.action, e.target, e.before, e.after, e.reason) for e in rows]


def test_switch_actions_audit_each_process_with_the_reason(operator, two_notes):
    operator.post(
        PROCESSES,
        {
            "action": "switch_off",
            ACTION_CHECKBOX_NAME: [two_notes],
            "confirm": "yes",
            "reason": "vendor master cleanup",
        },
    )
    operator.post(PROCESSES, {"action": "switch_on", ACTION_CHECKBOX_NAME: [two_notes]})
    assert events("process.switched_off", "process.switched_on") == [
        (
            "root",
            "process.switched_off",
            f"process:{two_notes}",
            None,
            {"isEnabled": False},
            "vendor master cleanup",
        ),
        (
            "root",
            "process.switched_on",
            f"process:{two_notes}",
            {"isEnabled": False, "disabledReason": "vendor master cleanup"},
            {"isEnabled": True},
            "",
        ),
    ]


def test_switching_on_the_change_page_is_audited(operator, two_notes):
    res = operator.post(
        f"{PROCESSES}{two_notes}/change/",
        {"is_enabled": "", "disabled_reason": "vendor master clean-up", "_save": "Save"},
    )
    assert res.status_code == 302
    assert Process.objects.get(pk=two_notes).is_enabled is False
    assert events("process.switched_off") == [
        (
            "root",
            "process.switched_off",
            f"process:{two_notes}",
            None,
            {"isEnabled": False},
            "vendor master clean-up",
        )
    ]


def test_the_instance_switch_is_audited_with_its_reason_and_the_setting_change(operator, two_notes):
    operator.post(f"{PROCESSES}instance-switch/", {"enabled": "0", "reason": "ERP upgrade"})
    operator.post(f"{PROCESSES}instance-switch/", {"enabled": "1"})
    assert events("process.all_switched_off", "process.all_switched_on", "setting.changed") == [
        ("root", "setting.changed", "processes.enabled", None, 0, ""),
        ("root", "process.all_switched_off", "processes.enabled", None, None, "ERP upgrade"),
        ("root", "setting.changed", "processes.enabled", 0, 1, ""),
        ("root", "process.all_switched_on", "processes.enabled", None, None, ""),
    ]


def test_steering_a_run_is_audited_and_a_refused_steer_is_not(alice, admin_api, two_notes):
    queued = run_invoke(process_id=two_notes, body={"memo": "m"}, user=alice)
    assert admin_api.post(f"/v1/processes/runs/{queued.run_id}/rollback").status_code == 409
    assert AuditEvent.objects.count() == 0
    assert admin_api.post(f"/v1/processes/runs/{queued.run_id}/cancel").status_code == 200
    done = run_invoke(process_id=two_notes, body={"memo": "n"}, user=alice)
    drain_runs()
    assert admin_api.post(f"/v1/processes/runs/{done.run_id}/rollback").status_code == 202
    assert events("run.cancelled", "run.rolled_back", "run.resumed") == [
        ("root", "run.cancelled", f"run:{queued.run_id}", {"state": "queued"}, None, ""),
        ("root", "run.rolled_back", f"run:{done.run_id}", None, {"state": "running"}, ""),
    ]
    # Cancelling a run already over changes nothing and records nothing.
    assert admin_api.post(f"/v1/processes/runs/{queued.run_id}/cancel").status_code == 200
    assert AuditEvent.objects.filter(action="run.cancelled").count() == 1
    assert ProcessRun.objects.get(pk=queued.pk).state == "cancelled"


def test_a_schedule_paused_by_failures_and_resumed_by_an_operator_is_audited(admin_user, operator):
    schedule_deploy(
        admin_user, entry("acme:notes", input={}), modules=(module("notes.ts", NOTES % "'memo'"),)
    )
    for n in range(5):
        assert schedules_fire_due(DUE + timedelta(days=n))[0].outcome == "failed"
    reason = ProcessSchedule.objects.get().paused_reason
    res = operator.post(
        "/admin/processes/processschedule/", {"action": "resume", ACTION_CHECKBOX_NAME: ["nightly"]}
    )
    assert res.status_code == 302
    assert ProcessSchedule.objects.get().is_paused is False
    rows = events("schedule.paused", "schedule.resumed")
    assert [r[:3] for r in rows] == [
        ("", "schedule.paused", "schedule:nightly"),
        ("root", "schedule.resumed", "schedule:nightly"),
    ]
    assert rows[0][5] == reason and rows[1][3] == {"isPaused": True, "pausedReason": reason}
    # Resuming again: not paused, nothing to record.
    operator.post(
        "/admin/processes/processschedule/", {"action": "resume", ACTION_CHECKBOX_NAME: ["nightly"]}
    )
    assert AuditEvent.objects.filter(action="schedule.resumed").count() == 1


def test_cancelling_a_process_s_queued_runs_audits_each_run(alice, admin_api, two_notes):
    runs = [run_invoke(process_id=two_notes, body={"memo": str(n)}, user=alice) for n in range(2)]
    assert admin_api.post(f"/v1/processes/{two_notes}/cancel").json() == {"cancelled": 2}
    assert sorted(events("run.cancelled")) == sorted(
        ("root", "run.cancelled", f"run:{run.run_id}", {"state": "queued"}, None, "")
        for run in runs
    )
