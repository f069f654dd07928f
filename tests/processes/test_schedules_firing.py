"""Firing schedules with the clock in the test's hands: ``schedules_fire_due(now)``."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.db import connections
from django_q.models import Schedule

from extensions.bundle import bundle_apply
from guardrails.settings import setting_set
from kernel.system_schedules import system_schedules_ensure
from processes.models import Process, ProcessRun
from processes.schedules.firing import (
    SCHEDULER_USERNAME,
    schedule_fire,
    schedule_resume,
    schedules_fire_due,
)
from processes.schedules.models import ProcessSchedule, ProcessScheduleFiring
from records.boundary import record_create
from records.models import Record
from records.trail import Actor
from tests.processes.engine_support import pump

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).parent.parent / "extensions" / "fixtures" / "processes"
TRACKED = "acme:migrate-customers-tracked"
DEPLOYED_AT = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
DUE = datetime(2026, 10, 2, 2, 0, tzinfo=UTC)  # '0 2 * * *' UTC, first after DEPLOYED_AT

NOTES = """\
import { defineProcess } from '@turbobase/extensions';

export default defineProcess({
  id: 'acme:notes',
  input: { type: 'object', properties: { memo: { type: 'string' } }, required: [%s] },
  steps: [{ id: 'note', recordType: 'salesOrder', build: (ctx) => ({ parent: { memo: ctx.input.memo ?? 'none' } }) }],
});
"""


def module(name: str, source: str | None = None) -> dict:
    entry = f"processes/{name}"
    return {
        "entry": entry,
        "files": {entry: source if source is not None else (FIXTURES / name).read_text()},
    }


def entry(
    process: str = TRACKED, name: str = "nightly", expr: str = "0 2 * * *", tz: str = "UTC", **body
) -> dict:
    return {
        "name": name,
        "scheduleKind": "cron",
        "scheduleExpr": expr,
        "scheduleTz": tz,
        "body": {"kind": "process", "process": process, **body},
    }


def schedule_deploy(
    by, *entries: dict, modules: tuple[dict, ...] = (), now: datetime = DEPLOYED_AT
) -> None:
    bundle_apply(
        data={
            "modules": [module("migrate-customers-tracked.ts"), *modules],
            "schedules": list(entries),
        },
        by=by,
        now=now,
    )


def items(user, count: int) -> None:
    actor = Actor(user=user)
    for n in range(count):
        record_create(
            actor=actor,
            record_type="migration_item",
            parent={
                "legacy_id": f"L{n:05d}",
                "company_name": f"Company {n}",
                "status": "pending",
                "batch": "2026-10",
            },
        )


def firings() -> list[tuple]:
    return list(
        ProcessScheduleFiring.objects.order_by("due_at", "id").values_list(
            "schedule_name", "due_at", "outcome", "field"
        )
    )


def test_a_due_schedule_invokes_as_the_scheduler_and_its_run_records_the_schedule(
    admin_user, alice
):
    items(alice, 3)
    schedule_deploy(admin_user, entry(input={"batch": "2026-10"}))
    assert schedules_fire_due(DUE - timedelta(seconds=1)) == []
    [firing] = schedules_fire_due(DUE + timedelta(seconds=20))
    run = ProcessRun.objects.get()
    # The schedule's own outcome is success the moment the run is queued.
    assert (firing.outcome, firing.run_id, firing.due_at, run.state) == (
        "success",
        run.run_id,
        DUE,
        "queued",
    )
    assert (run.process_id, run.schedule_name, run.input, run.mode) == (
        TRACKED,
        "nightly",
        {"batch": "2026-10"},
        "async",
    )
    scheduler = run.invoked_by
    assert (scheduler.username, scheduler.is_staff, scheduler.has_usable_password()) == (
        SCHEDULER_USERNAME,
        True,
        False,
    )
    schedule = ProcessSchedule.objects.get()
    assert (schedule.next_fire_at, schedule.last_fired_at, schedule.consecutive_failures) == (
        DUE + timedelta(days=1),
        DUE + timedelta(seconds=20),
        0,
    )
    pump()
    run.refresh_from_db()
    assert (run.state, run.outstanding) == ("committed", 0)
    # The administrator identity reads every row, whoever owns them.
    assert Record.reads.filter(record_type="customer").count() == 3


def test_a_due_time_fires_once_however_often_the_ticker_runs(admin_user):
    schedule_deploy(admin_user, entry(input={"batch": "2026-10"}))
    stale = ProcessSchedule.objects.get()  # what a second ticker read before the first claimed it
    assert len(schedules_fire_due(DUE)) == 1
    assert schedules_fire_due(DUE + timedelta(seconds=30)) == []
    assert schedule_fire(stale, now=DUE + timedelta(seconds=40)) is None
    assert ProcessRun.objects.count() == 1
    assert firings() == [("nightly", DUE, "success", "")]


def test_a_missed_due_time_fires_once_and_the_next_is_counted_from_now(admin_user):
    schedule_deploy(admin_user, entry(input={"batch": "2026-10"}))
    back = DUE + timedelta(days=3, hours=5)  # the instance was down for three days
    assert len(schedules_fire_due(back)) == 1
    assert ProcessSchedule.objects.get().next_fire_at == datetime(2026, 10, 6, 2, 0, tzinfo=UTC)
    assert schedules_fire_due(back + timedelta(minutes=1)) == []


def test_input_left_out_runs_with_an_empty_object(admin_user):
    schedule_deploy(admin_user, entry())
    schedules_fire_due(DUE)
    assert ProcessRun.objects.get().input == {}


@pytest.mark.parametrize(
    ("given", "field", "message"),
    [
        ([1, 2], "input", "must be a JSON object, not list"),
        ("2026-10", "input", "must be a JSON object, not str"),
        (None, "input", "must be a JSON object, not NoneType"),
        ({"batch": 7}, "input.batch", "7 is not of type 'string'"),
        (
            {"batch": "2026-10", "extra": 1},
            "input.extra",
            "Additional properties are not allowed ('extra' was unexpected)",
        ),
    ],
)
def test_input_that_fails_fails_that_firing_with_the_field_and_queues_nothing(
    admin_user, given, field, message
):
    schedule_deploy(admin_user, entry(input=given))
    [firing] = schedules_fire_due(DUE)
    assert (firing.outcome, firing.field, firing.message) == ("failed", field, message)
    # Nothing is queued; the firing is kept as a refused run naming the field (seed 004).
    run = ProcessRun.objects.get()
    assert (run.run_id, run.state, run.refusal_code, run.refusal_field, run.reason) == (
        firing.run_id,
        "refused",
        "INPUT_INVALID",
        field,
        f"{field}: {message}",
    )
    assert (run.started_at, run.delivery, run.enqueued_at, run.schedule_name) == (
        None,
        0,
        None,
        "nightly",
    )
    assert ProcessSchedule.objects.get().consecutive_failures == 1


@pytest.mark.parametrize("switch", ["process", "instance"])
def test_a_firing_is_skipped_not_failed_while_switched_off(admin_user, switch):
    schedule_deploy(admin_user, entry(input={"batch": "2026-10"}))
    ProcessSchedule.objects.update(consecutive_failures=2)
    if switch == "process":  # what the admin's switch does to the row
        Process.objects.filter(pk=TRACKED).update(
            is_enabled=False, disabled_reason="month end freeze"
        )
    else:
        setting_set("processes.enabled", 0)
    [firing] = schedules_fire_due(DUE)
    expected = (
        "month end freeze"
        if switch == "process"
        else "every process on the instance is switched off"
    )
    switch_name = f"{TRACKED}.enabled" if switch == "process" else "processes.enabled"
    run = ProcessRun.objects.get()  # recorded refused, naming the switch; never queued
    assert (firing.outcome, firing.run_id, firing.message) == ("skipped", run.run_id, expected)
    assert (run.state, run.refusal_code, run.refusal_field, run.reason, run.delivery) == (
        "refused",
        "PROCESS_DISABLED",
        switch_name,
        f"switched off ({switch_name}): {expected}",
        0,
    )
    schedule = ProcessSchedule.objects.get()
    assert (schedule.consecutive_failures, schedule.is_paused) == (
        2,
        False,
    )  # a skip is not counted
    assert schedule.next_fire_at == DUE + timedelta(days=1)


def test_five_failures_in_a_row_pause_the_schedule_and_a_success_resets_the_count(admin_user):
    strict, relaxed = NOTES % "'memo'", NOTES % ""
    schedule_deploy(
        admin_user, entry("acme:notes", input={}), modules=(module("notes.ts", strict),)
    )
    day = timedelta(days=1)
    for n in range(4):
        assert schedules_fire_due(DUE + n * day)[0].outcome == "failed"
    assert ProcessSchedule.objects.get().consecutive_failures == 4
    # The process is redeployed with a schema the input meets: the next firing succeeds.
    bundle_apply(data={"modules": [module("notes.ts", relaxed)]}, by=admin_user)
    assert schedules_fire_due(DUE + 4 * day)[0].outcome == "success"
    assert ProcessSchedule.objects.get().consecutive_failures == 0
    bundle_apply(data={"modules": [module("notes.ts", strict)]}, by=admin_user)
    for n in range(5, 10):
        assert schedules_fire_due(DUE + n * day)[0].outcome == "failed"
    schedule = ProcessSchedule.objects.get()
    assert (schedule.is_paused, schedule.consecutive_failures) == (True, 5)
    assert schedule.paused_reason == (
        "paused after 5 failed firings in a row; the last (input.memo): "
        "'memo' is a required property"
    )
    assert schedules_fire_due(DUE + 20 * day) == []
    # One run was queued; each of the nine failed firings is a refused run.
    assert (
        sorted(ProcessRun.objects.values_list("state", flat=True)) == ["queued"] + ["refused"] * 9
    )
    # Resuming (the admin's action) starts a fresh count from the next due time after now.
    assert schedule_resume(name="nightly", now=DUE + 20 * day + timedelta(hours=1)) is True
    schedule.refresh_from_db()
    assert (schedule.is_paused, schedule.consecutive_failures, schedule.next_fire_at) == (
        False,
        0,
        DUE + 21 * day,
    )


def test_firing_while_an_earlier_run_is_going_queues_another_and_writes_each_row_once(
    admin_user, alice
):
    items(alice, 6)
    schedule_deploy(admin_user, entry(input={"batch": "2026-10"}, expr="0 * * * *"))
    first_due = datetime(2026, 10, 1, 13, 0, tzinfo=UTC)
    schedules_fire_due(first_due)
    schedules_fire_due(first_due + timedelta(hours=1))  # the first run has not even started
    runs = list(ProcessRun.objects.order_by("created_at"))
    assert [r.state for r in runs] == ["queued", "queued"]
    pump()
    assert sorted(ProcessRun.objects.values_list("state", flat=True)) == ["committed", "committed"]
    assert Record.reads.filter(record_type="customer").count() == 6


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        # Spring forward (29 March): 02:30 does not exist; it fires once, at 03:30 CEST.
        (
            datetime(2026, 3, 27, 12, tzinfo=UTC),
            ["2026-03-28T02:30:00+01:00", "2026-03-29T03:30:00+02:00", "2026-03-30T02:30:00+02:00"],
        ),
        # Fall back (25 October): 02:30 happens twice; it fires at the first only.
        (
            datetime(2026, 10, 23, 12, tzinfo=UTC),
            ["2026-10-24T02:30:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"],
        ),
    ],
    ids=["spring-forward", "fall-back"],
)
def test_across_a_clock_change_a_berlin_schedule_fires_once_a_day(admin_user, start, expected):
    berlin = ZoneInfo("Europe/Berlin")
    schedule_deploy(
        admin_user,
        entry(input={"batch": "2026-10"}, expr="30 2 * * *", tz="Europe/Berlin"),
        now=start,
    )
    fired = []
    for step in range(72 * 6):  # a ticker every ten minutes for three days
        for firing in schedules_fire_due(start + timedelta(minutes=10 * step)):
            fired.append(firing.due_at.astimezone(berlin).isoformat())
    assert fired == expected
    assert ProcessRun.objects.count() == 3


def test_the_ticker_is_registered_with_django_q():
    system_schedules_ensure()  # what qcluster does at start
    tick = Schedule.objects.get(name="system.processes.schedules")
    assert (tick.func, tick.schedule_type, tick.minutes, tick.repeats) == (
        "processes.schedules.firing.schedules_tick",
        "I",
        1,
        -1,
    )


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_tickers_at_once_fire_a_due_time_once(admin_user):
    from tests.conftest import is_postgres

    if not is_postgres():
        pytest.skip("needs PostgreSQL row locks")
    schedule_deploy(admin_user, entry(input={"batch": "2026-10"}))
    barrier = threading.Barrier(4)
    fired: list[int] = []
    errors: list[Exception] = []

    def ticker() -> None:
        try:
            barrier.wait()
            fired.append(len(schedules_fire_due(DUE)))
        except Exception as exc:  # noqa: BLE001 — surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=ticker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert sorted(fired) == [0, 0, 0, 1]
    assert (ProcessRun.objects.count(), ProcessScheduleFiring.objects.count()) == (1, 1)


def test_the_admin_lists_schedules_and_their_firings_and_resumes_a_paused_one(admin_user, client):
    schedule_deploy(admin_user, entry(input=[1]))
    for n in range(5):
        schedules_fire_due(DUE + timedelta(days=n))
    assert ProcessSchedule.objects.get().is_paused
    client.force_login(admin_user)
    listing = client.get("/admin/processes/processschedule/")
    assert listing.status_code == 200 and b"nightly" in listing.content
    assert client.get("/admin/processes/processschedulefiring/").status_code == 200
    answer = client.post(
        "/admin/processes/processschedule/", {"action": "resume", "_selected_action": ["nightly"]}
    )
    assert answer.status_code == 302
    schedule = ProcessSchedule.objects.get()
    assert (schedule.is_paused, schedule.consecutive_failures) == (False, 0)
