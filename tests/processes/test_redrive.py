"""Redrive: a failed run carried on as the same run from the step that failed (issue 24, item 2).

Runs are performed inline (``drain_runs``, what the lanes' workers do); the hook that refuses
step two is a real ``before_save`` hook at the boundary, switched off to fix the cause."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from guardrails.settings import setting_set
from kernel.audit import AuditEvent
from processes.models import ProcessRun
from records.boundary import record_create, record_update
from records.errors import HookRejection
from records.hooks import hook_register
from records.models import Record
from records.trail import Actor
from tests.processes.conftest import drain_runs

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parent.parent / "extensions" / "fixtures" / "processes"
PID = "acme:three-orders"


def three_orders(third_memo: str = "three") -> str:
    """Three sales orders; the second names the first (``ctx.steps`` replayed from the ledger)."""
    return f"""\
import {{ defineProcess }} from '@turbobase/extensions';

export default defineProcess({{
  id: '{PID}',
  input: {{ type: 'object' }},
  onFailure: 'stop',
  steps: [
    {{ id: 'one', recordType: 'salesOrder', build: (ctx) => ({{ parent: {{ memo: 'one' }} }}) }},
    {{
      id: 'two',
      recordType: 'salesOrder',
      build: (ctx) => ({{ parent: {{ memo: 'two', pair_of: ctx.steps.one?.pgRowId }} }}),
    }},
    {{ id: 'three', recordType: 'salesOrder', build: (ctx) => ({{ parent: {{ memo: '{third_memo}' }} }}) }},
  ],
}});
"""


def _refuse_two(ctx) -> None:
    if ctx.record["parent"].get("memo") == "two":
        raise HookRejection("memo 'two' is blocked", code="TWO_BLOCKED", field="parent.memo")


@pytest.fixture
def refusing() -> Iterator[Callable[[], None]]:
    """A hook that refuses step two; calling the fixture's answer switches it off (the fix)."""
    unregister = hook_register(slot="before_save", record_type="salesOrder", hook=_refuse_two)
    done: list[bool] = []

    def fix() -> None:
        if not done:
            unregister()
            done.append(True)

    yield fix
    fix()


@pytest.fixture
def failed(deploy, alice, refusing) -> ProcessRun:
    """Alice's run of the three steps, failed at step two by the hook (the hook still on)."""
    deploy(three_orders(), "three-orders.ts")
    from processes.invoke import run_invoke

    run = run_invoke(process_id=PID, body={}, user=alice)
    drain_runs()
    run.refresh_from_db()
    assert run.state == "failed"
    return run


def _ledger(run: ProcessRun) -> list[tuple]:
    return [
        (row.step_id, row.disposition, row.skip_reason, row.superseded)
        for row in run.ledger.order_by("sequence")
    ]


def _memos() -> list[str]:
    return sorted(
        Record.reads.filter(record_type="salesOrder").values_list("fields__memo", flat=True)
    )


def test_redrive_carries_the_same_run_on_from_the_failed_step(alice, alice_api, failed, refusing):
    assert _ledger(failed) == [
        ("one", "confirmed", "", 0),
        ("two", "failed", "", 0),
        ("three", "skipped", "not_reached", 0),
    ]
    one = failed.ledger.get(step_id="one")
    refusing()  # the cause is fixed
    res = alice_api.post(f"/v1/processes/runs/{failed.run_id}/redrive", {}, format="json")
    assert res.status_code == 202, res.json()
    body = res.json()
    assert (body["run"]["runId"], body["run"]["state"], body["run"]["redrives"]) == (
        str(failed.run_id),
        "queued",
        1,
    )
    assert body["changedSince"] == []
    assert [(s["stepId"], s["superseded"]) for s in body["steps"]] == [("one", 0), ("two", 1)]
    drain_runs()
    run = ProcessRun.objects.get(pk=failed.pk)
    assert (run.state, run.redrives, run.reason, run.failed_sequence) == (
        "committed",
        1,
        None,
        None,
    )
    # Step one was not written again: one record, its one ledger row, the same id.
    assert _memos() == ["one", "three", "two"]
    assert _ledger(run) == [
        ("one", "confirmed", "", 0),
        ("two", "failed", "", 1),  # the failed attempt, set aside by redrive 1
        ("two", "confirmed", "", 0),
        ("three", "confirmed", "", 0),
    ]
    assert run.ledger.get(step_id="one").pk == one.pk
    two = run.ledger.get(step_id="two", superseded=0)
    assert Record.reads.get(pk=two.pg_row_id).fields["pair_of"] == str(one.pg_row_id)
    assert run.writes == 3
    event = AuditEvent.objects.get(action="run.redriven")
    assert (event.target, event.actor_name) == (f"run:{run.pk}", "alice")
    assert event.before == {"state": "failed", "moduleVersion": 1}
    assert event.after == {"moduleVersion": 1, "redrive": 1, "changedSince": []}


def test_a_redrive_keeps_the_runs_clock(alice_api, failed, refusing):
    # As a resume does: a redrive cannot buy a run more than the maximum runtime.
    first_start = failed.started_at
    assert first_start is not None
    refusing()
    assert alice_api.post(f"/v1/processes/runs/{failed.run_id}/redrive").status_code == 202
    drain_runs()
    run = ProcessRun.objects.get(pk=failed.pk)
    assert (run.state, run.started_at) == ("committed", first_start)
    assert run.worked_ms > failed.worked_ms > 0  # the working time the ceiling counts, kept


def test_a_redriven_run_past_its_working_time_stops_at_the_ceiling(alice_api, failed, refusing):
    setting_set("processes.max_run_ms", 2000)
    ProcessRun.objects.filter(pk=failed.pk).update(worked_ms=2000)
    refusing()
    assert alice_api.post(f"/v1/processes/runs/{failed.run_id}/redrive").status_code == 202
    drain_runs()
    run = ProcessRun.objects.get(pk=failed.pk)
    assert (run.state, run.outstanding) == ("committed", 2)  # steps two and three
    assert run.reason == "stopped at the per-run runtime ceiling processes.max_run_ms (2000 ms)"


def test_a_run_that_fails_again_can_be_redriven_again(alice, alice_api, failed, refusing):
    url = f"/v1/processes/runs/{failed.run_id}/redrive"
    assert alice_api.post(url).status_code == 202  # no body: the current version
    drain_runs()  # the hook is still on: step two fails again
    run = ProcessRun.objects.get(pk=failed.pk)
    assert (run.state, run.redrives) == ("failed", 1)
    assert run.ledger.filter(step_id="two", disposition="failed").count() == 2
    refusing()
    assert alice_api.post(url).json()["run"]["redrives"] == 2
    drain_runs()
    run.refresh_from_db()
    assert run.state == "committed"
    assert sorted(run.ledger.filter(step_id="two").values_list("superseded", flat=True)) == [
        0,
        1,
        2,
    ]
    assert _memos() == ["one", "three", "two"]


def test_only_a_failed_run_is_redriven_409_naming_the_state(alice, alice_api, failed, refusing):
    refusing()
    alice_api.post(f"/v1/processes/runs/{failed.run_id}/redrive")
    drain_runs()
    res = alice_api.post(f"/v1/processes/runs/{failed.run_id}/redrive")
    assert res.status_code == 409
    body = res.json()
    assert (body["error"], body["runId"], body["state"]) == (
        "process_run_not_redrivable",
        str(failed.run_id),
        "committed",
    )
    assert "this run is committed" in body["message"]
    assert ProcessRun.objects.get(pk=failed.pk).redrives == 1
    assert AuditEvent.objects.filter(action="run.redriven").count() == 1


def test_someone_elses_run_is_404_and_changes_nothing(bob_api, admin_api, failed, refusing):
    res = bob_api.post(f"/v1/processes/runs/{failed.run_id}/redrive")
    assert (res.status_code, res.json()) == (
        404,
        {"error": "process_run_not_found", "runId": str(failed.run_id)},
    )
    run = ProcessRun.objects.get(pk=failed.pk)
    assert (run.state, run.redrives) == ("failed", 0)
    assert not run.ledger.filter(superseded__gt=0).exists()
    refusing()
    assert admin_api.post(f"/v1/processes/runs/{failed.run_id}/redrive").status_code == 202


def test_a_bad_version_is_400_naming_the_field(alice_api, failed):
    url = f"/v1/processes/runs/{failed.run_id}/redrive"
    res = alice_api.post(url, {"version": "newest"}, format="json")
    assert res.status_code == 400
    assert res.json()["rejection"]["field"] == "version"
    res = alice_api.post(url, {"versoin": "latest"}, format="json")
    assert res.json()["rejection"]["field"] == "versoin"
    assert ProcessRun.objects.get(pk=failed.pk).state == "failed"


def test_version_latest_runs_the_new_versions_steps(alice_api, deploy, failed, refusing):
    deploy(three_orders(third_memo="three, as version two writes it"), "three-orders.ts")
    refusing()
    url = f"/v1/processes/runs/{failed.run_id}/redrive"
    res = alice_api.post(url, {"version": "latest"}, format="json")
    assert res.json()["run"]["moduleVersion"] == 2
    drain_runs()
    run = ProcessRun.objects.get(pk=failed.pk)
    assert (run.state, run.module_version) == ("committed", 2)
    assert _memos() == ["one", "three, as version two writes it", "two"]


def test_version_current_keeps_the_runs_version(alice_api, deploy, failed, refusing):
    deploy(three_orders(third_memo="three, as version two writes it"), "three-orders.ts")
    refusing()
    alice_api.post(f"/v1/processes/runs/{failed.run_id}/redrive", {"version": "current"})
    drain_runs()
    run = ProcessRun.objects.get(pk=failed.pk)
    assert (run.state, run.module_version) == ("committed", 1)
    assert _memos() == ["one", "three", "two"]


def test_changed_since_lists_a_record_edited_since_its_step(alice, alice_api, failed, refusing):
    one = failed.ledger.get(step_id="one")
    record_update(
        actor=Actor(user=alice),
        record_type="salesOrder",
        pg_row_id=one.pg_row_id,
        parent={"memo": "one, edited by hand"},
    )
    refusing()
    res = alice_api.post(f"/v1/processes/runs/{failed.run_id}/redrive")
    assert res.status_code == 202
    assert res.json()["changedSince"] == [
        {"recordType": "salesOrder", "pgRowId": str(one.pg_row_id), "stepId": "one"}
    ]
    drain_runs()  # the redrive went on, the edited record read fresh
    assert ProcessRun.objects.get(pk=failed.pk).state == "committed"
    assert _memos() == ["one, edited by hand", "three", "two"]


# --- a migration redrives from the row that failed ---------------------------------------------


def test_a_migration_redrives_from_the_row_that_failed(deploy, alice, alice_api, monkeypatch):
    deploy((FIXTURES / "migrate-customers-tracked.ts").read_text(), "migrate.ts")
    actor = Actor(user=alice)
    for n in range(4):
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

    def refuse(ctx) -> None:
        if ctx.record["parent"].get("company_name") == "Company 1":
            raise HookRejection("company 1 is blocked", code="BLOCKED", field="parent.company_name")

    from processes.invoke import run_invoke

    unregister = hook_register(slot="before_save", record_type="customer", hook=refuse)
    try:
        run = run_invoke(
            process_id="acme:migrate-customers-tracked", body={"batch": "2026-10"}, user=alice
        )
        drain_runs()
    finally:
        unregister()
    run.refresh_from_db()
    assert (run.state, run.outstanding) == ("failed", 2)
    first = run.ledger.get(step_id="create", row_key="L00000")
    record_update(
        actor=actor,
        record_type="customer",
        pg_row_id=first.pg_row_id,
        parent={"company_name": "Company 0, renamed"},
    )
    monkeypatch.setattr("processes.redrive.CHANGED_LOOKUP_CHUNK", 1)  # one look-up per record
    res = alice_api.post(f"/v1/processes/runs/{run.run_id}/redrive")
    assert res.status_code == 202
    assert res.json()["changedSince"] == [
        {"recordType": "customer", "pgRowId": str(first.pg_row_id), "stepId": "create"}
    ]
    drain_runs()
    run.refresh_from_db()
    assert (run.state, run.outstanding, run.slices, run.redrives) == ("committed", 0, 1, 1)
    # Row 0 was not visited again; row 1 resumed at its failed step; rows 2 and 3 ran.
    assert run.ledger.get(step_id="create", row_key="L00000", superseded=0).pk == first.pk
    assert run.ledger.filter(row_key="L00000").count() == 2
    assert list(
        run.ledger.filter(row_key="L00001")
        .order_by("sequence")
        .values_list("step_id", "disposition", "superseded")
    ) == [("create", "failed", 1), ("create", "confirmed", 0), ("mark", "confirmed", 0)]
    assert Record.reads.filter(record_type="customer").count() == 4
    assert set(
        Record.reads.filter(record_type="migration_item").values_list("fields__status", flat=True)
    ) == {"sent"}


# --- the CLI ------------------------------------------------------------------------------------


def test_the_cli_verb_redrives_and_prints_the_run_and_what_changed(
    live_server, monkeypatch, capsys, deploy, refusing
):
    from kernel.models import token_issue
    from processes.invoke import run_invoke
    from tests.conftest import cli, make_user

    ops = make_user("ops", admin=True)
    _, raw = token_issue(user=ops, scopes=["extensions:deploy", "data:read"])
    monkeypatch.setenv("TURBOBASE_URL", live_server.url)
    monkeypatch.setenv("TURBOBASE_TOKEN", raw)
    deploy(three_orders(), "three-orders.ts")
    run = run_invoke(process_id=PID, body={}, user=ops)
    drain_runs()
    one = run.ledger.get(step_id="one")
    record_update(
        actor=Actor(user=ops),
        record_type="salesOrder",
        pg_row_id=one.pg_row_id,
        parent={"memo": "x"},
    )
    refusing()
    code, out, _ = cli(capsys, "processes", "redrive", str(run.run_id))
    assert code == 0
    assert out.splitlines() == [
        f"redrive 1 of {run.run_id} queued (queued) on version 1",
        f"  changed since its step wrote it: salesOrder {one.pg_row_id} (step one)",
        f"watch it: turbobase logs --process-run {run.run_id} --follow",
    ]
    drain_runs()
    code, out, _ = cli(capsys, "processes", "run", str(run.run_id))
    assert "  redrives: 1" in out.splitlines()
    assert any(
        "two salesOrder failed [set aside by redrive 1]" in line for line in out.splitlines()
    )
    code, _, err = cli(capsys, "processes", "redrive", str(run.run_id), "--version", "latest")
    assert code != 0
    assert "409 process_run_not_redrivable" in err


def test_the_redrive_answers_fit_the_schema(alice_api, bob_api, failed, refusing):
    from tests.turbobase.test_openapi import assert_documented

    path = "/v1/processes/runs/{run_id}/redrive"
    url = f"/v1/processes/runs/{failed.run_id}/redrive"
    assert_documented(bob_api.post(url), "post", path)  # 404
    assert_documented(alice_api.post(url, {"version": 2}, format="json"), "post", path)  # 400
    refusing()
    body = assert_documented(alice_api.post(url), "post", path)  # 202
    assert body["run"]["redrives"] == 1
    assert_documented(alice_api.post(url), "post", path)  # 409: queued
    detail = alice_api.get(f"/v1/processes/runs/{failed.run_id}")
    assert_documented(detail, "get", "/v1/processes/runs/{run_id}")


def test_a_run_failed_by_a_rejected_task_asks_the_task_again(admin_user, alice, bob):
    from processes.human_tasks.models import HumanTask
    from tests.conftest import client_for
    from tests.processes.engine_support import deploy as deploy_ts
    from tests.processes.engine_support import invoke, pump
    from tests.processes.task_support import approval

    deploy_ts(approval(), by=admin_user)
    run = invoke("t:approve-order", {"memo": "PO-7"}, alice)
    pump()
    task = HumanTask.objects.get(run=run)
    client_for(bob).post(f"/v1/tasks/{task.pk}/reject", {"reason": "too dear"}, format="json")
    pump()
    run.refresh_from_db()
    assert run.state == "failed"
    assert client_for(alice).post(f"/v1/processes/runs/{run.pk}/redrive").status_code == 202
    pump()
    run.refresh_from_db()
    task.refresh_from_db()
    assert (run.state, run.pending_reason, task.state) == ("running", "awaitingAction", "open")
    done = client_for(bob).post(
        f"/v1/tasks/{task.pk}/complete", {"output": {"note": "fine"}}, format="json"
    )
    assert done.status_code == 200
    pump()
    run.refresh_from_db()
    assert run.state == "committed"
    assert list(
        run.ledger.order_by("sequence").values_list("step_id", "disposition", "superseded")
    ) == [("approve", "failed", 1), ("approve", "confirmed", 0), ("order", "confirmed", 0)]
    assert _memos() == ["PO-7: fine"]


def test_a_step_whose_record_the_source_refused_is_not_redriven(deploy, alice, alice_api):
    from processes.invoke import run_invoke
    from sources.scripting import sandbox_script_set

    source = (FIXTURES / "raise-po-and-bill.ts").read_text()
    deploy(source.replace("onFailure: 'rollback'", "onFailure: 'stop'"), "po.ts")
    sandbox_script_set("purchaseOrder", refuse_code="VENDOR_INACTIVE", refuse_field="entity_id")
    run = run_invoke(
        process_id="acme:raise-po-and-bill", body={"vendorId": "V-9", "amount": 250}, user=alice
    )
    drain_runs()
    run.refresh_from_db()
    assert run.state == "failed"
    po = run.ledger.get(step_id="po")
    res = alice_api.post(f"/v1/processes/runs/{run.run_id}/redrive")
    assert res.status_code == 409
    body = res.json()
    assert (body["error"], body["state"]) == ("process_run_not_redrivable", "failed")
    assert f"step 'po' created purchaseOrder {po.pg_row_id}" in body["message"]
    run.refresh_from_db()
    assert (run.state, run.redrives) == ("failed", 0)
    assert not run.ledger.filter(superseded__gt=0).exists()


def test_a_switched_off_process_is_409_and_changes_nothing(alice_api, failed, refusing):
    from processes.models import Process

    Process.objects.filter(pk=PID).update(is_enabled=False)
    refusing()
    res = alice_api.post(f"/v1/processes/runs/{failed.run_id}/redrive")
    assert (res.status_code, res.json()["error"]) == (409, "process_disabled")
    run = ProcessRun.objects.get(pk=failed.pk)
    assert (run.state, run.redrives) == ("failed", 0)
    assert not run.ledger.filter(superseded__gt=0).exists()
    assert not AuditEvent.objects.filter(action="run.redriven").exists()


def test_latest_must_still_be_a_chain_400_naming_version(alice_api, deploy, failed):
    migration = (FIXTURES / "migrate-customers-tracked.ts").read_text()
    deploy(migration.replace("acme:migrate-customers-tracked", PID), "three-orders.ts")
    res = alice_api.post(
        f"/v1/processes/runs/{failed.run_id}/redrive", {"version": "latest"}, format="json"
    )
    assert res.status_code == 400
    assert res.json()["rejection"]["field"] == "version"
    assert "no longer a chain" in res.json()["rejection"]["message"]
    assert ProcessRun.objects.get(pk=failed.pk).state == "failed"


def test_rest_reads_the_redrives_and_the_set_aside_attempt(alice_api, failed, refusing):
    refusing()
    alice_api.post(f"/v1/processes/runs/{failed.run_id}/redrive")
    drain_runs()
    runs = alice_api.get(f"/v1/rest/process_run?select=redrives&run_id=eq.{failed.run_id}")
    assert runs.json() == [{"redrives": 1}]
    url = f"/v1/rest/process_run_step?select=step_id,superseded&run_id=eq.{failed.run_id}"
    steps = alice_api.get(url + "&superseded=gt.0")
    assert steps.json() == [{"step_id": "two", "superseded": 1}]


def test_the_admin_run_page_redrives_a_failed_run(operator, failed, refusing):
    runs = "/admin/processes/processrun/"
    page = operator.get(f"{runs}{failed.run_id}/change/").content.decode()
    assert 'id="steer-redrive"' in page and 'id="steer-resume"' not in page
    refusing()
    res = operator.post(f"{runs}{failed.run_id}/steer/redrive/", follow=True)
    assert "Run redriven: it is queued again at the step that failed" in res.content.decode()
    drain_runs()
    run = ProcessRun.objects.get(pk=failed.pk)
    assert (run.state, run.redrives) == ("committed", 1)
    page = operator.get(f"{runs}{failed.run_id}/change/").content.decode()
    assert "set aside by redrive 1" in page
    assert 'id="steer-redrive"' not in page  # committed: nothing to redrive
    event = AuditEvent.objects.get(action="run.redriven")
    assert event.actor_name == "root"
