"""Deploying schedules with a bundle: who may, what they may run, and what they keep alive."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from extensions.bundle import bundle_apply
from extensions.models import ExtensionModule, ExtensionStatus
from processes.schedules.errors import ScheduleForbidden
from processes.schedules.models import ProcessSchedule
from processes.schedules.service import schedule_trigger_for
from tests.processes.conftest import TWO_NOTES

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).parent.parent / "extensions" / "fixtures" / "processes"
TRACKED = "acme:migrate-customers-tracked"
NOW = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)


def module(name: str, source: str | None = None) -> dict:
    entry = f"processes/{name}"
    return {
        "entry": entry,
        "files": {entry: source if source is not None else (FIXTURES / name).read_text()},
    }


def nightly(process: str = TRACKED, **overrides) -> dict:
    entry = {
        "name": "migrate-customers-nightly",
        "scheduleKind": "cron",
        "scheduleExpr": "0 2 * * *",
        "scheduleTz": "UTC",
        "body": {"kind": "process", "process": process, "input": {"batch": "2026-10"}},
    }
    return {**entry, **overrides}


def active_ids() -> list[str]:
    return sorted(
        ExtensionModule.objects.filter(status=ExtensionStatus.ACTIVE).values_list("id", flat=True)
    )


def test_a_process_and_its_schedule_deploy_together(admin_api):
    answer = admin_api.post(
        "/v1/extensions/bundle/apply",
        {"modules": [module("migrate-customers-tracked.ts")], "schedules": [nightly()]},
        format="json",
    )
    assert answer.status_code == 200, answer.json()
    assert answer.json()["schedules"] == [
        {
            "name": "migrate-customers-nightly",
            "change": "new",
            "process": TRACKED,
            "cron": "0 2 * * *",
            "tz": "UTC",
        }
    ]
    schedule = ProcessSchedule.objects.get()
    assert (
        schedule.process_id,
        schedule.schedule_expr,
        schedule.schedule_tz,
        schedule.is_paused,
    ) == (TRACKED, "0 2 * * *", "UTC", False)
    assert schedule.body == {"kind": "process", "process": TRACKED, "input": {"batch": "2026-10"}}
    assert schedule.next_fire_at is not None and schedule.deployed_by.username == "root"
    assert schedule_trigger_for(TRACKED) == {
        "kind": "schedule",
        "name": "migrate-customers-nightly",
        "cron": "0 2 * * *",
        "tz": "UTC",
        "timezone": "UTC",
        "isPaused": False,
    }
    assert schedule_trigger_for("acme:other") is None
    listed = {p["id"]: p for p in admin_api.get("/v1/processes").json()["processes"]}
    assert listed[TRACKED]["trigger"] == schedule_trigger_for(TRACKED)


def test_a_schedule_may_name_a_process_deployed_earlier(admin_user):
    bundle_apply(data={"modules": [module("migrate-customers-tracked.ts")]}, by=admin_user)
    bundle_apply(data={"schedules": [nightly()]}, by=admin_user, now=NOW)
    assert ProcessSchedule.objects.get().next_fire_at == datetime(2026, 10, 2, 2, 0, tzinfo=UTC)


def test_the_next_due_time_is_read_in_the_schedules_zone(admin_user):
    bundle_apply(
        data={
            "modules": [module("migrate-customers-tracked.ts")],
            "schedules": [nightly(scheduleTz="Europe/Berlin")],
        },
        by=admin_user,
        now=NOW,
    )
    # 02:00 in Berlin on 2 October 2026 is 00:00 UTC (CEST).
    assert ProcessSchedule.objects.get().next_fire_at == datetime(2026, 10, 2, 0, 0, tzinfo=UTC)


def test_a_schedule_naming_a_process_that_is_not_deployed_refuses_the_whole_bundle(admin_api):
    answer = admin_api.post(
        "/v1/extensions/bundle/apply",
        {"modules": [module("two-notes.ts", TWO_NOTES)], "schedules": [nightly()]},
        format="json",
    )
    assert answer.status_code == 400
    assert answer.json() == {
        "error": "invalid_schedule",
        "rejection": {
            "code": "SCHEDULE_PROCESS_NOT_DEPLOYED",
            "field": "schedules[0].body.process",
            "message": f"the schedule 'migrate-customers-nightly' runs '{TRACKED}', which is not deployed and "
            "not declared in this deploy",
        },
    }
    assert (ExtensionModule.objects.count(), ProcessSchedule.objects.count()) == (0, 0)


BAD_ENTRIES = [
    ({"body": {"kind": "process"}}, "schedules[0].body.process", "SCHEDULE_PROCESS_NOT_DEPLOYED"),
    (
        {"body": {"kind": "process", "process": ""}},
        "schedules[0].body.process",
        "SCHEDULE_PROCESS_NOT_DEPLOYED",
    ),
    ({"name": "system.nightly"}, "schedules[0].name", "SCHEDULE_NAME_RESERVED"),
    ({"name": "System.processes.sweep"}, "schedules[0].name", "SCHEDULE_NAME_RESERVED"),
    ({"scheduleExpr": "0 25 * * *"}, "schedules[0].scheduleExpr", "SCHEDULE_INVALID"),
    ({"scheduleExpr": "0 2 * * * *"}, "schedules[0].scheduleExpr", "SCHEDULE_INVALID"),
    ({"scheduleTz": "Europe/Atlantis"}, "schedules[0].scheduleTz", "SCHEDULE_INVALID"),
    ({"scheduleKind": "interval"}, "schedules[0].scheduleKind", "SCHEDULE_INVALID"),
    (
        {"body": {"kind": "webhook", "process": TRACKED}},
        "schedules[0].body.kind",
        "SCHEDULE_INVALID",
    ),
    ({"body": [TRACKED]}, "schedules[0].body", "SCHEDULE_INVALID"),
    ({"name": ""}, "schedules[0].name", "SCHEDULE_INVALID"),
    ({"every": "day"}, "schedules[0].every", "SCHEDULE_INVALID"),
]


@pytest.mark.parametrize(("overrides", "field", "code"), BAD_ENTRIES)
def test_a_bad_entry_is_refused_naming_its_field_and_nothing_is_written(
    admin_api, overrides, field, code
):
    answer = admin_api.post(
        "/v1/extensions/bundle/apply",
        {"modules": [module("migrate-customers-tracked.ts")], "schedules": [nightly(**overrides)]},
        format="json",
    )
    assert answer.status_code == 400, answer.json()
    body = answer.json()
    assert (body["error"], body["rejection"]["code"], body["rejection"]["field"]) == (
        "invalid_schedule",
        code,
        field,
    )
    assert (ExtensionModule.objects.count(), ProcessSchedule.objects.count()) == (0, 0)


def test_the_same_name_twice_is_refused(admin_api):
    answer = admin_api.post(
        "/v1/extensions/bundle/apply",
        {"modules": [module("migrate-customers-tracked.ts")], "schedules": [nightly(), nightly()]},
        format="json",
    )
    assert answer.status_code == 400
    assert answer.json()["rejection"]["field"] == "schedules[1].name"
    assert ProcessSchedule.objects.count() == 0


def test_only_an_administrator_deploys_a_schedule(alice, alice_api, admin_user):
    bundle_apply(data={"modules": [module("migrate-customers-tracked.ts")]}, by=admin_user)
    answer = alice_api.post(
        "/v1/extensions/bundle/apply", {"schedules": [nightly()]}, format="json"
    )
    assert answer.status_code == 403
    assert answer.json()["error"] == "admin_required"
    # The service refuses on its own too, whoever calls it.
    with pytest.raises(ScheduleForbidden) as refused:
        bundle_apply(data={"schedules": [nightly()]}, by=alice)
    assert (refused.value.http_status, refused.value.error) == (403, "admin_required")
    assert ProcessSchedule.objects.count() == 0


@pytest.fixture
def scheduled(admin_user):
    bundle_apply(
        data={
            "modules": [module("migrate-customers-tracked.ts"), module("two-notes.ts", TWO_NOTES)],
            "schedules": [nightly()],
        },
        by=admin_user,
        now=NOW,
    )
    return ProcessSchedule.objects.get()


def test_a_scheduled_process_cannot_be_removed_alone(admin_api, scheduled):
    answer = admin_api.delete(f"/v1/extensions/{TRACKED}")
    assert answer.status_code == 409
    assert answer.json() == {
        "error": "extension_in_use",
        "rejection": {
            "code": "PROCESS_SCHEDULED",
            "field": "id",
            "message": f"the schedule 'migrate-customers-nightly' runs {TRACKED}; remove the schedule in the same "
            "deploy (turbobase ext deploy --to <env>) or point it at another process",
        },
        "id": TRACKED,
        "schedules": ["migrate-customers-nightly"],
    }
    assert active_ids() == [TRACKED, "acme:two-notes"]
    assert ProcessSchedule.objects.count() == 1


def test_a_bundle_that_drops_the_process_but_keeps_the_schedule_is_refused(admin_api, scheduled):
    for body in ({"removes": [TRACKED]}, {"removes": [TRACKED], "schedules": [nightly()]}):
        answer = admin_api.post("/v1/extensions/bundle/apply", body, format="json")
        assert answer.status_code == 409, answer.json()
        assert answer.json()["error"] == "extension_in_use"
        assert answer.json()["schedules"] == ["migrate-customers-nightly"]
    assert answer.json()["rejection"]["field"] == "schedules[0].body.process"
    assert active_ids() == [TRACKED, "acme:two-notes"]
    assert ProcessSchedule.objects.get().process_id == TRACKED


def test_removing_both_in_one_deploy_is_fine(admin_api, scheduled):
    answer = admin_api.post(
        "/v1/extensions/bundle/apply", {"removes": [TRACKED], "schedules": []}, format="json"
    )
    assert answer.status_code == 200, answer.json()
    assert answer.json()["removed"] == [{"id": TRACKED, "kind": "process", "status": "removed"}]
    assert answer.json()["schedules"][0]["change"] == "removed"
    assert active_ids() == ["acme:two-notes"]
    assert ProcessSchedule.objects.count() == 0


def test_repointing_the_schedule_in_the_same_deploy_is_fine(admin_api, scheduled):
    moved = nightly(
        "acme:two-notes",
        body={"kind": "process", "process": "acme:two-notes", "input": {"memo": "nightly"}},
    )
    answer = admin_api.post(
        "/v1/extensions/bundle/apply", {"removes": [TRACKED], "schedules": [moved]}, format="json"
    )
    assert answer.status_code == 200, answer.json()
    assert active_ids() == ["acme:two-notes"]
    assert ProcessSchedule.objects.get().process_id == "acme:two-notes"
    # Now the old process is free to go and the new one is guarded.
    assert admin_api.delete("/v1/extensions/acme:two-notes").status_code == 409


def test_redeploying_an_unchanged_schedule_keeps_its_state_and_a_change_resets_it(
    admin_user, scheduled
):
    ProcessSchedule.objects.filter(pk=scheduled.pk).update(consecutive_failures=3)
    bundle_apply(
        data={"schedules": [nightly()]}, by=admin_user, now=datetime(2026, 10, 5, tzinfo=UTC)
    )
    kept = ProcessSchedule.objects.get()
    assert (kept.next_fire_at, kept.consecutive_failures) == (scheduled.next_fire_at, 3)
    bundle_apply(
        data={"schedules": [nightly(scheduleExpr="0 3 * * *")]},
        by=admin_user,
        now=datetime(2026, 10, 5, tzinfo=UTC),
    )
    changed = ProcessSchedule.objects.get()
    assert (changed.next_fire_at, changed.consecutive_failures) == (
        datetime(2026, 10, 5, 3, tzinfo=UTC),
        0,
    )


def test_a_bundle_without_schedules_leaves_them_alone(admin_user, scheduled):
    bundle_apply(data={"modules": [module("two-notes.ts", TWO_NOTES)]}, by=admin_user)
    assert list(ProcessSchedule.objects.values_list("name", flat=True)) == [
        "migrate-customers-nightly"
    ]
