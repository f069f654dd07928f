"""The run history's purge (``processes.history``): what goes, what stays, the archive, the lease,
the audit; ``POST /v1/history/purge`` and its refusals."""

from __future__ import annotations

import gzip
import json
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from guardrails.models import HeldDelete, HeldStatus
from guardrails.settings import setting_set
from kernel.audit import AuditEvent, audit_record
from kernel.models import token_issue
from kernel.system_schedules import system_schedules
from processes.events.models import Event, EventWait
from processes.history.lease import lease_free, lease_take
from processes.history.purge import history_purge, history_purge_scheduled
from processes.human_tasks.models import HumanTask
from processes.models import LinkHow, ProcessRun, ProcessRunStep, RunState
from records.boundary import record_create, record_delete
from records.door import door_open
from records.models import Record, RecordWriteState, WriteTrail
from records.trail import Actor
from tests.conftest import client_for
from tests.processes.history_support import days_ago, history_run, run_ids
from tests.turbobase.test_openapi import assert_documented

pytestmark = pytest.mark.django_db

PURGE = "/v1/history/purge"
ENDED = (
    RunState.COMMITTED,
    RunState.FAILED,
    RunState.ROLLED_BACK,
    RunState.CANCELLED,
    RunState.REFUSED,
)


def _counts() -> tuple[int, int, int, int]:
    return (
        ProcessRun.objects.count(),
        ProcessRunStep.objects.count(),
        EventWait.objects.count(),
        HumanTask.objects.count(),
    )


def _purged_audits() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action="history.purged").order_by("id"))


def test_old_finished_runs_go_with_their_ledger_waits_and_tasks_and_nothing_else(admin_user, alice):
    gone = [history_run(state, finished=days_ago(100), wait=True, task=True) for state in ENDED]
    young = history_run(finished=days_ago(89))
    # Not finished, however old: queued, working, parked (a rollback queued on an ended run
    # still carries its old finish time).
    unfinished = [
        history_run(RunState.QUEUED, finished=days_ago(200), wait=True, task=True),
        history_run(RunState.RUNNING, pending_reason="running", finished=days_ago(200)),
        history_run(RunState.RUNNING, pending_reason="awaitingTime", finished=days_ago(200)),
        history_run(RunState.RUNNING, pending_reason="awaitingInput", wait=True),
    ]
    held_for = history_run(RunState.FAILED, finished=days_ago(300))
    record = record_create(
        actor=Actor(user=alice), record_type="customer", parent={"company_name": "Acme"}
    ).record
    record_delete(
        actor=Actor(user=alice, process_run_id=str(held_for.pk), process_step="step1"),
        record_type="customer",
        pg_row_id=record.pk,
    )
    assert HeldDelete.objects.get(process_run_id=str(held_for.pk)).status == HeldStatus.PENDING
    # A retry of an old run that is still queued keeps the old run; a finished, young one is
    # kept itself and loses only the link.
    retried = history_run(RunState.FAILED, finished=days_ago(150))
    retry = history_run(RunState.QUEUED, linked_from=retried, linked_how=LinkHow.RETRY)
    redirected = history_run(RunState.CANCELLED, finished=days_ago(150))
    redirect = history_run(
        finished=days_ago(1), linked_from=redirected, linked_how=LinkHow.REDIRECT
    )
    # An event that started a purged run stays (it is its sender's), naming the run.
    event = Event.objects.create(name="order.paid", run_ids=[str(gone[0].pk)])
    trail_before = list(WriteTrail.reads.order_by("id").values_list("id", "process_run_id"))
    records_before = Record.reads.count(), RecordWriteState.reads.count()
    audits_before = AuditEvent.objects.exclude(action="history.purged").count()

    result = history_purge(by=admin_user)

    assert result.answer() == {
        "runs": 6,
        "ledgerRows": 12,
        "events": 5,
        "tasks": 5,
        "trailRows": 0,
        "auditEvents": 0,
        "archived": None,
    }
    kept = {young, *unfinished, held_for, retried, retry, redirect}
    assert run_ids() == {str(run.pk) for run in kept}
    assert {str(pk) for pk in ProcessRunStep.objects.values_list("run_id", flat=True)} == {
        str(run.pk) for run in kept if run.ledger.exists()
    }
    assert set(EventWait.objects.values_list("run_id", flat=True)) == {
        unfinished[0].pk,
        unfinished[3].pk,
    }
    assert list(HumanTask.objects.values_list("run_id", flat=True)) == [unfinished[0].pk]
    redirect.refresh_from_db()
    assert (redirect.linked_from_id, redirect.linked_how) == (None, LinkHow.REDIRECT)
    retry.refresh_from_db()
    assert retry.linked_from_id == retried.pk
    # Records, the write trail, held deletes, the audit and events are not the purge's.
    assert list(WriteTrail.reads.order_by("id").values_list("id", "process_run_id")) == (
        trail_before
    )
    assert (Record.reads.count(), RecordWriteState.reads.count()) == records_before
    assert HeldDelete.objects.get(process_run_id=str(held_for.pk)).status == HeldStatus.PENDING
    assert AuditEvent.objects.exclude(action="history.purged").count() == audits_before
    assert Event.objects.get(pk=event.pk).run_ids == [str(gone[0].pk)]


def test_the_held_run_goes_once_its_delete_is_decided(admin_user, alice):
    run = history_run(RunState.FAILED, finished=days_ago(300))
    record = record_create(
        actor=Actor(user=alice), record_type="customer", parent={"company_name": "Acme"}
    ).record
    record_delete(
        actor=Actor(user=alice, process_run_id=str(run.pk)),
        record_type="customer",
        pg_row_id=record.pk,
    )
    assert history_purge(by=admin_user).runs == 0
    HeldDelete.objects.filter(process_run_id=str(run.pk)).update(status=HeldStatus.REJECTED)
    assert history_purge(by=admin_user).runs == 1
    assert not ProcessRun.objects.filter(pk=run.pk).exists()


def test_retain_runs_keeps_the_newest_finished_runs_in_small_batches(admin_user):
    setting_set("history.retain_runs", 3)
    same_time = days_ago(2)
    finished = [history_run(finished=days_ago(10 - i), ledger=1) for i in range(4)]
    tied = sorted((history_run(finished=same_time, ledger=1) for _ in range(2)), key=lambda r: r.pk)
    newest = history_run(finished=days_ago(1), ledger=1)
    unfinished = history_run(RunState.QUEUED)
    # Newest first: newest, then the tie broken by run id (the higher id is newer).
    result = history_purge(by=admin_user, batch_runs=2)
    assert (result.runs, result.ledger_rows, result.batches) == (4, 4, 2)
    assert run_ids() == {str(r.pk) for r in (*tied, newest, unfinished)}
    assert not set(run_ids()) & {str(r.pk) for r in finished}


def test_finished_before_overrides_the_thresholds_for_one_call(admin_user):
    old = history_run(finished=days_ago(3))
    kept = history_run(finished=days_ago(1))
    result = history_purge(by=admin_user, finished_before=days_ago(2))
    assert result.runs == 1
    assert run_ids() == {str(kept.pk)}
    assert not ProcessRun.objects.filter(pk=old.pk).exists()


def test_a_dry_run_counts_the_same_and_writes_nothing(admin_user, tmp_path, settings):
    settings.TURBOBASE_HISTORY_ARCHIVE_DIR = str(tmp_path)
    for state in ENDED:
        history_run(state, finished=days_ago(120), wait=True, task=True, ledger=3)
    history_run(finished=days_ago(1))
    before, audits = _counts(), AuditEvent.objects.count()
    dry = history_purge(by=admin_user, dry_run=True)
    assert dry.answer() == {
        "runs": 5,
        "ledgerRows": 15,
        "events": 5,
        "tasks": 5,
        "trailRows": 0,
        "auditEvents": 0,
        "archived": None,
    }
    assert (_counts(), AuditEvent.objects.count(), list(tmp_path.iterdir())) == (
        before,
        audits,
        [],
    )
    real = history_purge(by=admin_user)
    assert {k: v for k, v in real.answer().items() if k != "archived"} == {
        k: v for k, v in dry.answer().items() if k != "archived"
    }


def test_each_purged_run_is_archived_as_one_gzipped_json_line(admin_user, tmp_path, settings):
    settings.TURBOBASE_HISTORY_ARCHIVE_DIR = str(tmp_path)
    runs = [
        history_run(state, finished=days_ago(100 + i), wait=True, task=True)
        for i, state in enumerate(ENDED)
    ]
    result = history_purge(by=admin_user, batch_runs=2)
    path = tmp_path / f"runs-{timezone.now():%Y-%m-%d}.jsonl.gz"
    assert result.archived == str(path)
    lines = [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()]
    # Oldest first, one line per run, each with what belonged to it.
    assert [line["run"]["run_id"] for line in lines] == [str(r.pk) for r in reversed(runs)]
    first = lines[0]
    assert set(first) == {"run", "ledger", "events", "tasks", "slices"}
    assert (first["run"]["state"], first["run"]["process_id"]) == ("refused", "t:history")
    assert [row["step_id"] for row in first["ledger"]] == ["step1", "step2"]
    assert [(row["event_name"], row["state"]) for row in first["events"]] == [
        ("order.paid", "closed")
    ]
    assert [(row["title"], row["assignee"]) for row in first["tasks"]] == [("Approve", "bob")]
    # A second purge the same day appends (another gzip member: the file still reads as one).
    later = history_run(finished=days_ago(200))
    assert history_purge(by=admin_user).archived == str(path)
    lines = gzip.decompress(path.read_bytes()).splitlines()
    assert len(lines) == 6 and json.loads(lines[-1])["run"]["run_id"] == str(later.pk)


@pytest.mark.parametrize("problem", ["missing", "a file", "the day's file is a directory"])
def test_an_archive_that_cannot_be_written_stops_the_purge_before_anything_goes(
    admin_api, tmp_path, settings, problem
):
    target = tmp_path / "archive"
    if problem == "a file":
        target.write_text("not a directory")
    elif problem == "the day's file is a directory":
        (target / f"runs-{timezone.now():%Y-%m-%d}.jsonl.gz").mkdir(parents=True)
    settings.TURBOBASE_HISTORY_ARCHIVE_DIR = str(target)
    for state in ENDED:
        history_run(state, finished=days_ago(100), wait=True, task=True)
    before = _counts()
    res = admin_api.post(PURGE, {}, format="json")
    body = assert_documented(res, "post", "/v1/history/purge")
    assert (res.status_code, body["error"], body["rejection"]["code"]) == (
        409,
        "history_archive_unwritable",
        "HISTORY_ARCHIVE_UNWRITABLE",
    )
    assert str(target) in body["rejection"]["message"]
    assert _counts() == before
    # The lease is free again: a purge once the directory is fixed goes through.
    settings.TURBOBASE_HISTORY_ARCHIVE_DIR = str(tmp_path)
    assert admin_api.post(PURGE, {}, format="json").json()["runs"] == 5


def test_a_purge_while_another_runs_is_409_and_does_nothing(admin_api):
    history_run(finished=days_ago(100))
    assert lease_take("another purge")
    before = _counts()
    res = admin_api.post(PURGE, {"dryRun": False}, format="json")
    body = assert_documented(res, "post", "/v1/history/purge")
    assert (res.status_code, body["error"]) == (409, "history_purge_running")
    assert (_counts(), list(_purged_audits())) == (before, [])
    # The hourly job leaves it to the running one.
    assert history_purge_scheduled() == 0 and _counts() == before
    lease_free("another purge")
    assert history_purge_scheduled() == 1


def test_a_purge_whose_holder_died_is_taken_over_when_its_lease_ran_out(admin_user):
    from processes.history.models import HistoryPurgeLease

    history_run(finished=days_ago(100))
    assert lease_take("a worker that died")
    HistoryPurgeLease.objects.update(held_until=timezone.now() - timedelta(seconds=1))
    assert history_purge(by=admin_user).runs == 1


def test_each_purge_writes_one_audit_event_with_what_it_did(admin_api, admin_user):
    history_run(finished=days_ago(100), ledger=3, task=True)
    answer = admin_api.post(PURGE, {}, format="json").json()
    admin_api.post(PURGE, {"dryRun": True}, format="json")  # a dry run writes nothing
    [event] = _purged_audits()
    assert (event.actor_id, event.target, event.after) == (
        admin_user.pk,
        "history",
        {
            **answer,
            "rule": "history.retain_days 90, history.retain_runs 1000000",
            "finished": True,
        },
    )
    assert answer == {
        "runs": 1,
        "ledgerRows": 3,
        "events": 0,
        "tasks": 1,
        "trailRows": 0,
        "auditEvents": 0,
        "archived": None,
    }
    admin_api.post(PURGE, {"finishedBefore": "2020-01-01T00:00:00Z"}, format="json")
    assert _purged_audits()[-1].after["rule"] == "finishedBefore 2020-01-01T00:00:00+00:00"


def test_the_api_answers_the_documented_shape(admin_api):
    history_run(finished=days_ago(100))
    history_run(finished=days_ago(5))
    res = admin_api.post(PURGE, {"dryRun": True}, format="json")
    assert res.status_code == 200
    assert assert_documented(res, "post", "/v1/history/purge") == {
        "runs": 1,
        "ledgerRows": 2,
        "events": 0,
        "tasks": 0,
        "trailRows": 0,
        "auditEvents": 0,
        "archived": None,
    }
    counts = admin_api.get("/v1/processes/queue").json()["counts"]
    assert counts["committed"] == 2
    res = admin_api.post(PURGE, {"finishedBefore": "2099-01-01T00:00:00+02:00"}, format="json")
    assert assert_documented(res, "post", "/v1/history/purge")["runs"] == 2
    assert ProcessRun.objects.count() == 0
    # The queue's counts (the run tally, on PostgreSQL) no longer count the purged runs.
    counts = admin_api.get("/v1/processes/queue").json()["counts"]
    assert counts["committed"] == 0


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"dryrun": True}, "dryrun", "dryrun is not a key of a purge (dryRun, finishedBefore)"),
        ({"dryRun": "yes"}, "dryRun", "dryRun must be true or false"),
        ({"dryRun": 1}, "dryRun", "dryRun must be true or false"),
        (
            {"finishedBefore": "last week"},
            "finishedBefore",
            "finishedBefore must be an ISO 8601 time such as 2026-01-31T00:00:00Z",
        ),
        (
            {"finishedBefore": "2026-13-45T00:00:00Z"},
            "finishedBefore",
            "finishedBefore must be an ISO 8601 time such as 2026-01-31T00:00:00Z",
        ),
        (
            {"finishedBefore": 1700000000},
            "finishedBefore",
            "finishedBefore must be an ISO 8601 time such as 2026-01-31T00:00:00Z",
        ),
        (
            {"finishedBefore": "2026-01-31T00:00:00"},
            "finishedBefore",
            "finishedBefore must say its offset (Z, +02:00): '2026-01-31T00:00:00' does not",
        ),
        ([True], "body", "the body must be a JSON object {dryRun?, finishedBefore?}"),
    ],
)
def test_a_bad_body_is_400_naming_the_field_and_purges_nothing(admin_api, body, field, message):
    history_run(finished=days_ago(100))
    before = _counts()
    res = admin_api.post(PURGE, body, format="json")
    rejection = assert_documented(res, "post", "/v1/history/purge")["rejection"]
    assert (res.status_code, rejection) == (
        400,
        {"code": "HISTORY_PURGE_INVALID", "field": field, "message": message},
    )
    assert (_counts(), _purged_audits()) == (before, [])


def test_only_an_administrator_or_a_deploy_token_may_purge(alice, admin_user):
    history_run(finished=days_ago(100))
    res = client_for(alice).post(PURGE, {}, format="json")
    assert (res.status_code, assert_documented(res, "post", PURGE)["error"]) == (
        403,
        "admin_required",
    )
    _, raw = token_issue(user=admin_user, scopes=["data:read", "data:write"])
    reader = APIClient()
    reader.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    res = reader.post(PURGE, {}, format="json")
    assert (res.status_code, res.json()["error"]) == (403, "insufficient_scope")
    assert ProcessRun.objects.count() == 1
    _, raw = token_issue(user=admin_user, scopes=["extensions:deploy"])
    deployer = APIClient()
    deployer.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert deployer.post(PURGE, {}, format="json").json()["runs"] == 1


def test_the_purge_runs_hourly_and_bounds_its_time(admin_user):
    [job] = [job for job in system_schedules() if job.name == "system.processes.history_purge"]
    assert (job.func, job.minutes) == ("processes.tasks.history_purge", 60)
    for _ in range(3):
        history_run(finished=days_ago(100), ledger=1)
    # A budget already spent: one batch, then it stops; the next purge goes on.
    first = history_purge(batch_runs=2, max_seconds=0)
    assert (first.runs, first.finished) == (2, False)
    assert history_purge().runs == 1


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("history.retain_days", "90", "history.retain_days must be a whole number"),
        ("history.retain_days", 0, "history.retain_days must be between 1 and 36500"),
        ("history.retain_runs", 10.0, "history.retain_runs must be a whole number"),
        ("history.retain_runs", 0, "history.retain_runs must be between 1 and 2147483647"),
        ("history.archive_dir", "/tmp", "'history.archive_dir' is not an instance setting"),
    ],
)
def test_the_retention_settings_are_checked_naming_the_key(admin_api, key, value, message):
    res = admin_api.patch("/v1/settings", {key: value}, format="json")
    rejection = res.json()["rejection"]
    assert (res.status_code, rejection["field"]) == (400, key)
    assert rejection["message"].startswith(message)
    rows = {row["key"]: row for row in admin_api.get("/v1/settings").json()["settings"]}
    assert (rows["history.retain_days"]["value"], rows["history.retain_runs"]["value"]) == (
        90,
        1_000_000,
    )
    assert rows["history.retain_days"]["group"] == "history"


def test_the_trail_and_the_audit_keep_every_row_unless_an_operator_sets_their_retention(
    admin_user, alice
):
    made = record_create(
        actor=Actor(user=alice), record_type="legacy_customer", parent={"company_name": "T"}
    )
    fresh = record_create(
        actor=Actor(user=alice), record_type="legacy_customer", parent={"company_name": "U"}
    )
    with door_open():
        WriteTrail.objects.filter(pg_row_id=made.record.pk).update(at=days_ago(40))
    old_audit = audit_record(actor=admin_user, action="test.old", target="x")
    AuditEvent.objects.filter(pk=old_audit.pk).update(at=days_ago(400))
    trail_before = WriteTrail.reads.count()

    kept = history_purge(by=admin_user)  # the defaults: 0, keep every row
    assert (kept.trail_rows, kept.audit_events) == (0, 0)
    assert WriteTrail.reads.count() == trail_before
    assert AuditEvent.objects.filter(pk=old_audit.pk).exists()

    setting_set("trail.retain_days", 30)
    setting_set("audit.retain_days", 365)
    counted = history_purge(by=admin_user, dry_run=True)
    assert (counted.trail_rows, counted.audit_events) == (1, 1)
    assert WriteTrail.reads.count() == trail_before  # a dry run deletes nothing

    purged = history_purge(by=admin_user)
    assert (purged.answer()["trailRows"], purged.answer()["auditEvents"]) == (1, 1)
    assert not WriteTrail.reads.filter(pg_row_id=made.record.pk).exists()
    assert WriteTrail.reads.filter(pg_row_id=fresh.record.pk).exists()
    assert not AuditEvent.objects.filter(pk=old_audit.pk).exists()
    assert Record.reads.filter(pk=made.record.pk).exists()  # records are never purged
    event = AuditEvent.objects.filter(action="history.purged").latest("at")
    assert (event.after["trailRows"], event.after["auditEvents"]) == (1, 1)
