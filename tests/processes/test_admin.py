"""The Processes screen: switches, last runs, the instance switch, and the read-only run ledger."""

from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.test import Client

from guardrails.settings import setting_get
from processes.invoke import run_invoke
from processes.models import Process, ProcessRun
from tests.conftest import make_user
from tests.processes.conftest import FAILS_AT_SECOND, drain_runs

pytestmark = pytest.mark.django_db

PROCESSES = "/admin/processes/process/"
RUNS = "/admin/processes/processrun/"


def test_the_processes_screen_lists_each_process_with_its_switch_and_last_runs(
    operator, alice, two_notes
):
    run = run_invoke(process_id="acme:two-notes", body={"memo": "m"}, user=alice)
    drain_runs()
    res = operator.get(PROCESSES)
    assert res.status_code == 200
    page = res.content.decode()
    assert "acme:two-notes" in page
    assert 'name="form-0-is_enabled"' in page and 'name="form-0-disabled_reason"' in page
    assert f"{RUNS}{run.run_id}/change/" in page
    assert "Switch every process off" in page


def test_the_process_page_renders_with_its_runs(operator, alice, two_notes):
    run_invoke(process_id="acme:two-notes", body={"memo": "m"}, user=alice)
    res = operator.get(f"{PROCESSES}acme:two-notes/change/")
    assert res.status_code == 200
    assert "queued" in res.content.decode()


def test_switching_a_process_off_in_the_admin_makes_invoke_answer_409_with_the_reason(
    operator, alice_api, two_notes
):
    res = operator.post(
        f"{PROCESSES}acme:two-notes/change/",
        {"is_enabled": "", "disabled_reason": "vendor master is being cleaned", "_save": "Save"},
    )
    assert res.status_code == 302, res.content.decode()[:2000]
    assert Process.objects.get(pk="acme:two-notes").is_enabled is False
    answer = alice_api.post("/v1/processes/acme:two-notes", {"memo": "x"}, format="json")
    assert answer.status_code == 409
    assert answer.json() == {
        "error": "process_disabled",
        "id": "acme:two-notes",
        "reason": "vendor master is being cleaned",
    }
    assert ProcessRun.objects.count() == 0


def test_switch_off_action_asks_why_on_a_confirmation_page_then_switches_with_that_reason(
    operator, alice_api, two_notes
):
    confirm = operator.post(
        PROCESSES, {"action": "switch_off", ACTION_CHECKBOX_NAME: ["acme:two-notes"]}
    )
    assert confirm.status_code == 200
    assert "Yes, switch 1 process off" in confirm.content.decode()
    assert Process.objects.get(pk="acme:two-notes").is_enabled is True  # asked, not done
    no_reason = operator.post(
        PROCESSES,
        {
            "action": "switch_off",
            ACTION_CHECKBOX_NAME: ["acme:two-notes"],
            "confirm": "yes",
            "reason": "  ",
        },
    )
    assert "Give a reason" in no_reason.content.decode()
    assert Process.objects.get(pk="acme:two-notes").is_enabled is True
    operator.post(
        PROCESSES,
        {
            "action": "switch_off",
            ACTION_CHECKBOX_NAME: ["acme:two-notes"],
            "confirm": "yes",
            "reason": "vendor master cleanup",
        },
    )
    process = Process.objects.get(pk="acme:two-notes")
    assert (process.is_enabled, process.disabled_reason) == (False, "vendor master cleanup")
    answer = alice_api.post("/v1/processes/acme:two-notes", {"memo": "x"}, format="json")
    assert (answer.status_code, answer.json()["reason"]) == (409, "vendor master cleanup")
    operator.post(PROCESSES, {"action": "switch_on", ACTION_CHECKBOX_NAME: ["acme:two-notes"]})
    process.refresh_from_db()
    assert (process.is_enabled, process.disabled_reason) == (True, "")
    assert (
        alice_api.post("/v1/processes/acme:two-notes", {"memo": "x"}, format="json").status_code
        == 202
    )


def test_re_enabling_a_process_on_its_page_clears_the_old_reason(operator, two_notes):
    operator.post(
        f"{PROCESSES}acme:two-notes/change/",
        {"is_enabled": "", "disabled_reason": "vendor master is being cleaned", "_save": "Save"},
    )
    res = operator.post(
        f"{PROCESSES}acme:two-notes/change/",
        {"is_enabled": "on", "disabled_reason": "vendor master is being cleaned", "_save": "Save"},
    )
    assert res.status_code == 302
    process = Process.objects.get(pk="acme:two-notes")
    assert (process.is_enabled, process.disabled_reason) == (True, "")


def test_switching_off_without_a_reason_is_refused_by_field(operator, two_notes):
    res = operator.post(
        f"{PROCESSES}acme:two-notes/change/",
        {"is_enabled": "", "disabled_reason": "", "_save": "Save"},
    )
    assert res.status_code == 200
    assert "Give a reason for switching it off." in res.content.decode()
    assert Process.objects.get(pk="acme:two-notes").is_enabled is True


def test_the_instance_switch_confirms_and_asks_why_then_turns_every_process_off_and_on(
    operator, alice_api, two_notes
):
    confirm = operator.get(f"{PROCESSES}instance-switch/?enabled=0")
    assert confirm.status_code == 200
    assert (
        "Every process on this instance is switched off: new invokes are refused"
        in confirm.content.decode()
    )
    assert setting_get("processes.enabled") == 1
    refused = operator.post(f"{PROCESSES}instance-switch/", {"enabled": "0", "reason": ""})
    assert refused.status_code == 400 and "Give a reason" in refused.content.decode()
    assert setting_get("processes.enabled") == 1
    res = operator.post(f"{PROCESSES}instance-switch/", {"enabled": "0", "reason": "ERP upgrade"})
    assert res.status_code == 302
    assert setting_get("processes.enabled") == 0
    assert "Switch processes back on" in operator.get(PROCESSES).content.decode()
    answer = alice_api.post("/v1/processes/acme:two-notes", {"memo": "x"}, format="json")
    assert (answer.status_code, answer.json()["reason"]) == (
        409,
        "every process on the instance is switched off",
    )
    operator.post(f"{PROCESSES}instance-switch/", {"enabled": "1"})
    assert setting_get("processes.enabled") == 1
    assert (
        alice_api.post("/v1/processes/acme:two-notes", {"memo": "x"}, format="json").status_code
        == 202
    )


def test_the_instance_switch_refuses_operators_without_change_rights(operator, two_notes):
    staff_without_rights = make_user("viewer")
    staff_without_rights.is_staff = True
    staff_without_rights.save()
    client = Client()
    client.force_login(staff_without_rights)
    assert client.get(f"{PROCESSES}instance-switch/?enabled=0").status_code == 403
    assert (
        client.post(f"{PROCESSES}instance-switch/", {"enabled": "0", "reason": "x"}).status_code
        == 403
    )
    assert setting_get("processes.enabled") == 1


def test_a_run_page_shows_its_ledger_read_only(operator, alice, deploy):
    deploy(FAILS_AT_SECOND, "fails.ts")
    run = run_invoke(process_id="acme:fails-at-second", body={}, user=alice)
    drain_runs()
    assert operator.get(RUNS).status_code == 200
    res = operator.get(f"{RUNS}{run.run_id}/change/")
    assert res.status_code == 200
    page = res.content.decode()
    assert "REQUIRED_FIELD_MISSING" in page and "legacy_id is required" in page
    assert 'name="_save"' not in page
    assert operator.post(f"{RUNS}{run.run_id}/delete/").status_code == 403
