"""Task steps in-process (``pump`` plays the workers): the contract, the ledger, who sees and
decides a task, and every refusal of ``/v1/tasks``. The same journeys with real workers are in
``test_api_tasks_workers.py``."""

from __future__ import annotations

import pytest

from kernel.audit import AuditEvent
from processes.contract import ContractInvalid
from processes.human_tasks.models import HumanTask
from processes.models import ProcessRun
from records.models import Record
from tests.conftest import client_for, make_user
from tests.processes.engine_support import deploy, invoke, ledger, pump
from tests.processes.task_support import approval

pytestmark = pytest.mark.django_db


def _parked(admin_user, alice, source: str | None = None, memo: str = "PO-7") -> ProcessRun:
    deploy(source or approval(), by=admin_user)
    run = invoke("t:approve-order", {"memo": memo}, alice)
    pump()
    run.refresh_from_db()
    return run


def test_a_task_step_parks_the_run_awaiting_action_and_completing_it_carries_the_output_on(
    admin_user, alice, bob
):
    run = _parked(admin_user, alice)
    assert (run.state, run.pending_reason, run.waiting_step) == (
        "running",
        "awaitingAction",
        "approve",
    )
    assert (run.lease_owner, run.wake_at) == ("", None)  # no worker held, no due time
    assert ledger(run) == []
    res = client_for(alice).get(f"/v1/processes/runs/{run.pk}")
    assert res.json()["run"]["pendingReason"] == "awaitingAction"

    tasks = client_for(bob).get("/v1/tasks").json()["tasks"]
    assert len(tasks) == 1
    task = tasks[0]
    assert {
        k: task[k]
        for k in ("runId", "processId", "stepId", "title", "details", "assignee", "state")
    } == {
        "runId": str(run.pk),
        "processId": "t:approve-order",
        "stepId": "approve",
        "title": "Approve PO-7",
        "details": {"memo": "PO-7", "run": str(run.pk)},
        "assignee": "bob",
        "state": "open",
    }
    done = client_for(bob).post(
        f"/v1/tasks/{task['taskId']}/complete", {"output": {"note": "ok by bob"}}, format="json"
    )
    assert done.status_code == 200, done.content
    assert (done.json()["state"], done.json()["output"], done.json()["decidedBy"]) == (
        "completed",
        {"note": "ok by bob"},
        "bob",
    )
    run.refresh_from_db()
    assert (run.state, run.pending_reason) == ("running", "queued")  # woken: waiting for a worker
    pump()
    run.refresh_from_db()
    assert run.state == "committed", run.reason
    assert ledger(run) == [("approve", "confirmed", None), ("order", "confirmed", None)]
    assert run.ledger.get(step_id="approve").answer == {"note": "ok by bob"}
    assert Record.reads.get(record_type="salesOrder").fields["memo"] == "PO-7: ok by bob"
    event = AuditEvent.objects.get(action="task.completed")
    assert (event.actor_name, event.target, event.after) == (
        "bob",
        f"task:{task['taskId']}",
        {"state": "completed", "output": {"note": "ok by bob"}},
    )


def test_a_decided_task_answers_409_and_changes_nothing(admin_user, alice, bob):
    run = _parked(admin_user, alice)
    task = HumanTask.objects.get(run=run)
    url = f"/v1/tasks/{task.pk}"
    assert (
        client_for(bob).post(f"{url}/reject", {"reason": "too dear"}, format="json").status_code
        == 200
    )
    again = client_for(bob).post(f"{url}/complete", {"output": 1}, format="json")
    assert again.status_code == 409
    assert again.json() == {
        "error": "task_decided",
        "message": f"task {task.pk} is already rejected; nothing was changed",
        "taskId": str(task.pk),
        "state": "rejected",
    }
    task.refresh_from_db()
    assert (task.state, task.reason, task.output) == ("rejected", "too dear", None)
    assert AuditEvent.objects.filter(target=f"task:{task.pk}").count() == 1


def test_someone_else_is_told_404_and_an_administrator_403(admin_user, alice, bob):
    run = _parked(admin_user, alice)
    task = HumanTask.objects.get(run=run)
    for user in (alice, make_user("carol")):  # the invoker is not the assignee either
        assert client_for(user).get("/v1/tasks").json() == {"tasks": []}
        res = client_for(user).post(f"/v1/tasks/{task.pk}/complete", {"output": 1}, format="json")
        assert (res.status_code, res.json()["error"]) == (404, "task_not_found")
        assert res.json() == client_for(user).post(
            "/v1/tasks/00000000-0000-0000-0000-000000000000/complete", {"output": 1}, format="json"
        ).json() | {"taskId": str(task.pk)}  # the same answer as a task that does not exist
    admin = client_for(admin_user)
    assert [t["taskId"] for t in admin.get("/v1/tasks").json()["tasks"]] == [str(task.pk)]
    res = admin.post(f"/v1/tasks/{task.pk}/reject", {"reason": "no"}, format="json")
    assert (res.status_code, res.json()["error"]) == (403, "task_not_assigned")
    task.refresh_from_db()
    assert task.state == "open"


@pytest.mark.parametrize(
    ("verb", "body", "field"),
    [
        ("complete", {}, "output"),
        ("complete", {"output": 1, "note": "x"}, "note"),
        ("complete", [1], "body"),
        ("complete", {"output": "x" * 100_001}, "output"),
        ("reject", {}, "reason"),
        ("reject", {"reason": "  "}, "reason"),
        ("reject", {"reason": 5}, "reason"),
    ],
)
def test_a_bad_body_is_400_naming_its_field_and_decides_nothing(
    admin_user, alice, bob, verb, body, field
):
    run = _parked(admin_user, alice)
    task = HumanTask.objects.get(run=run)
    res = client_for(bob).post(f"/v1/tasks/{task.pk}/{verb}", body, format="json")
    assert res.status_code == 400, res.content
    assert res.json()["rejection"]["field"] == field
    assert res.json()["rejection"]["code"] == "TASK_BODY_INVALID"
    task.refresh_from_db()
    assert task.state == "open"


def test_a_group_task_is_every_members_and_one_decides_it(admin_user, alice):
    carol = make_user("carol", groups=("finance",))
    dave = make_user("dave", groups=("finance",))
    run = _parked(admin_user, alice, approval(assignee="group:finance"))
    for member in (carol, dave):
        assert [t["assignee"] for t in client_for(member).get("/v1/tasks").json()["tasks"]] == [
            "group:finance"
        ]
    assert client_for(make_user("erin", groups=("sales",))).get("/v1/tasks").json() == {"tasks": []}
    task = HumanTask.objects.get(run=run)
    assert (
        client_for(dave)
        .post(f"/v1/tasks/{task.pk}/complete", {"output": {"note": "dave"}}, format="json")
        .status_code
        == 200
    )
    assert (
        client_for(carol)
        .post(f"/v1/tasks/{task.pk}/complete", {"output": {"note": "carol"}}, format="json")
        .status_code
        == 409
    )
    pump()
    run.refresh_from_db()
    assert run.state == "committed"
    assert Record.reads.get(record_type="salesOrder").fields["memo"] == "PO-7: dave"


def test_rejecting_fails_the_step_task_rejected_and_on_refused_continue_carries_on(
    admin_user, alice, bob
):
    run = _parked(admin_user, alice, approval(on_refused="continue"))
    task = HumanTask.objects.get(run=run)
    client_for(bob).post(f"/v1/tasks/{task.pk}/reject", {"reason": "over budget"}, format="json")
    pump()
    run.refresh_from_db()
    assert run.state == "committed", run.reason
    assert ledger(run) == [("approve", "failed", "TASK_REJECTED"), ("order", "confirmed", None)]
    refusal = run.ledger.get(step_id="approve").refusal
    assert refusal == {
        "code": "TASK_REJECTED",
        "field": "reason",
        "message": "'Approve PO-7' rejected by bob: over budget",
    }
    assert Record.reads.get(record_type="salesOrder").fields["memo"] == "PO-7: not approved"


def test_rejecting_with_on_refused_stop_fails_the_run(admin_user, alice, bob):
    run = _parked(admin_user, alice)
    task = HumanTask.objects.get(run=run)
    client_for(bob).post(f"/v1/tasks/{task.pk}/reject", {"reason": "over budget"}, format="json")
    pump()
    run.refresh_from_db()
    assert run.state == "failed"
    assert run.reason == (
        "step 'approve' failed: TASK_REJECTED: 'Approve PO-7' rejected by bob: over budget"
    )
    assert ledger(run) == [("approve", "failed", "TASK_REJECTED"), ("order", "skipped", None)]
    assert not Record.reads.filter(record_type="legacy_customer").exists()


def test_cancelling_a_parked_run_closes_its_task(admin_user, alice, bob):
    run = _parked(admin_user, alice)
    assert (
        client_for(alice).post(f"/v1/processes/runs/{run.pk}/cancel").json()["state"] == "cancelled"
    )
    task = HumanTask.objects.get(run=run)
    assert (task.state, task.reason) == (
        "cancelled",
        "its run ended cancelled before anyone decided",
    )
    res = client_for(bob).post(f"/v1/tasks/{task.pk}/complete", {"output": 1}, format="json")
    assert (res.status_code, res.json()["state"]) == (409, "cancelled")


@pytest.mark.parametrize(
    ("step", "field"),
    [
        ("{ id: 'a', task: { title: 'x' } }", "steps[0].task.assignee"),
        ("{ id: 'a', task: { assignee: 'group:', title: 'x' } }", "steps[0].task.assignee"),
        ("{ id: 'a', task: { assignee: 'bob' } }", "steps[0].task.title"),
        (
            "{ id: 'a', task: { assignee: 'bob', title: 'x', timeout: '7 days' } }",
            "steps[0].task.timeout",
        ),
        (
            "{ id: 'a', task: { assignee: 'bob', title: 'x', details: { a: 1 } } }",
            "steps[0].task.details",
        ),
        ("{ id: 'a', task: { assignee: 'bob', title: 'x', due: '1d' } }", "steps[0].task.due"),
        (
            "{ id: 'a', recordType: 'customer', task: { assignee: 'bob', title: 'x' } }",
            "steps[0].recordType",
        ),
        (
            "{ id: 'a', onRefused: 'maybe', task: { assignee: 'bob', title: 'x' } }",
            "steps[0].onRefused",
        ),
    ],
)
def test_the_contract_refuses_a_bad_task_step_by_its_field(admin_user, step, field):
    source = (
        "import { defineProcess } from '@turbobase/extensions';\n"
        f"export default defineProcess({{ id: 't:bad', input: {{ type: 'object' }}, steps: [{step}] }});\n"
    )
    with pytest.raises(ContractInvalid) as refused:
        deploy(source, by=admin_user)
    assert refused.value.field == field


def test_a_migration_may_not_wait_for_a_person(admin_user):
    source = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({ id: 't:bad', input: { type: 'object' },
  eachRow: { outstanding: () => 'migration_item?select=id', key: 'id' },
  steps: [{ id: 'ask', task: { assignee: 'bob', title: 'x' } }] });
"""
    with pytest.raises(ContractInvalid) as refused:
        deploy(source, by=admin_user)
    assert refused.value.field == "steps[0].task"


def test_an_unknown_assignee_fails_the_step_by_name(admin_user, alice):
    run = _parked(admin_user, alice, approval(assignee="nobody-here"))
    assert run.state == "failed"
    assert run.ledger.get(step_id="approve").refusal["code"] == "TASK_ASSIGNEE_UNKNOWN"
    assert not HumanTask.objects.exists()


def test_a_timeout_expires_the_task_at_the_runs_due_time(admin_user, alice, bob):
    from datetime import timedelta

    from django.utils import timezone

    run = _parked(admin_user, alice, approval(timeout="7d"))
    task = HumanTask.objects.get(run=run)
    assert run.wake_at == task.expires_at  # the timeout is the run's due time (wake_at index)
    assert timedelta(days=7) - (task.expires_at - task.created_at) < timedelta(seconds=5)
    past = timezone.now() - timedelta(seconds=1)
    HumanTask.objects.filter(pk=task.pk).update(expires_at=past)  # seven days on
    ProcessRun.objects.filter(pk=run.pk).update(wake_at=past)
    assert client_for(bob).get("/v1/tasks").json()["tasks"][0]["state"] == "expired"
    late = client_for(bob).post(f"/v1/tasks/{task.pk}/complete", {"output": 1}, format="json")
    assert (late.status_code, late.json()["state"]) == (409, "expired")
    pump()
    run.refresh_from_db()
    task.refresh_from_db()
    assert (task.state, task.decided_by) == ("expired", None)
    assert run.state == "failed"
    assert ledger(run) == [("approve", "failed", "TASK_EXPIRED"), ("order", "skipped", None)]


def test_every_tasks_answer_fits_the_schema(admin_user, alice, bob):
    from tests.turbobase.test_openapi import assert_documented

    run = _parked(admin_user, alice)
    task = HumanTask.objects.get(run=run)
    complete, reject = "/v1/tasks/{task_id}/complete", "/v1/tasks/{task_id}/reject"
    bob_api = client_for(bob)
    listed = assert_documented(bob_api.get("/v1/tasks"), "get", "/v1/tasks")
    assert listed["tasks"][0]["taskId"] == str(task.pk)
    assert_documented(bob_api.get("/v1/tasks", {"state": "nope"}), "get", "/v1/tasks")  # 400
    bad = bob_api.post(f"/v1/tasks/{task.pk}/complete", {}, format="json")
    assert assert_documented(bad, "post", complete)["rejection"]["field"] == "output"
    nosy = client_for(alice).post(f"/v1/tasks/{task.pk}/reject", {"reason": "x"}, format="json")
    assert assert_documented(nosy, "post", reject)["error"] == "task_not_found"
    admin = client_for(admin_user).post(
        f"/v1/tasks/{task.pk}/reject", {"reason": "x"}, format="json"
    )
    assert assert_documented(admin, "post", reject)["error"] == "task_not_assigned"
    done = bob_api.post(f"/v1/tasks/{task.pk}/complete", {"output": [1, 2]}, format="json")
    assert assert_documented(done, "post", complete)["output"] == [1, 2]
    again = bob_api.post(f"/v1/tasks/{task.pk}/reject", {"reason": "x"}, format="json")
    assert assert_documented(again, "post", reject)["state"] == "completed"


ROLLS_BACK = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:draft-then-approve',
  input: { type: 'object' },
  onFailure: 'rollback',
  steps: [
    { id: 'draft', recordType: 'legacy_customer', build: () => ({ parent: { company_name: 'draft' } }) },
    { id: 'approve', task: { assignee: 'bob', title: 'Approve the draft' } },
  ],
});
"""


def test_a_rejected_task_rolls_the_run_back_under_on_failure_rollback(admin_user, alice, bob):
    deploy(ROLLS_BACK, by=admin_user)
    run = invoke("t:draft-then-approve", {}, alice)
    pump()
    assert Record.reads.filter(record_type="legacy_customer").count() == 1
    task = HumanTask.objects.get(run=run)
    client_for(bob).post(f"/v1/tasks/{task.pk}/reject", {"reason": "wrong"}, format="json")
    pump()
    run.refresh_from_db()
    assert run.state == "rolled_back", run.reason
    assert ledger(run) == [("draft", "rolled_back", None), ("approve", "failed", "TASK_REJECTED")]
    assert not Record.reads.filter(record_type="legacy_customer").exists()


def test_the_inbox_lists_only_your_open_tasks_and_says_when_one_was_decided_meanwhile(
    operator, admin_user, alice, bob
):
    from django.contrib.auth.models import Group

    admin_user.groups.add(Group.objects.create(name="finance"))
    deploy(approval(assignee="group:finance"), by=admin_user)
    deploy(approval("t:bobs", assignee="bob"), by=admin_user, name="processes/bobs.ts")
    mine = invoke("t:approve-order", {"memo": "PO-1"}, alice)
    invoke("t:bobs", {"memo": "PO-2"}, alice)
    pump()
    task = HumanTask.objects.get(run=mine)
    inbox = operator.get("/admin/processes/humantask/inbox/")
    assert [row["task"].pk for row in inbox.context["rows"]] == [task.pk]  # not bob's
    # Someone else in finance completes it while the page is open; this Reject comes too late.
    carol = make_user("carol", groups=("finance",))
    client_for(carol).post(f"/v1/tasks/{task.pk}/complete", {"output": 1}, format="json")
    late = operator.post(
        f"/admin/processes/humantask/inbox/{task.pk}/reject/",
        {f"{task.pk}-reason": "no"},
        follow=True,
    )
    assert [str(m) for m in late.context["messages"]] == [
        f"task {task.pk} is already completed; nothing was changed"
    ]
    task.refresh_from_db()
    assert (task.state, task.decided_by) == ("completed", carol)
    assert late.context["rows"] == []
    # The run page names its task and links to it; the task's page is read-only.
    page = operator.get(f"/admin/processes/processrun/{mine.pk}/change/").content.decode()
    assert f'href="/admin/processes/humantask/{task.pk}/change/">Approve PO-1</a>' in page
    assert "(completed by carol)" in page
    assert operator.get(f"/admin/processes/humantask/{task.pk}/change/").status_code == 200


@pytest.mark.parametrize(
    ("task", "code"),
    [
        ("assignee: () => 'bo\\u0000b', title: 'x'", "TASK_ASSIGNEE_UNKNOWN"),
        ("assignee: 'bob', title: () => 42", "TASK_TITLE_INVALID"),
        ("assignee: 'bob', title: 'x', details: () => [1]", "TASK_DETAILS_INVALID"),
        (
            "assignee: 'bob', title: 'x', details: () => ({ note: 'a\\u0000b' })",
            "TASK_DETAILS_INVALID",
        ),
    ],
)
def test_what_the_functions_return_is_checked_before_any_task_is_made(
    admin_user, alice, bob, task, code
):
    source = (
        "import { defineProcess } from '@turbobase/extensions';\n"
        "export default defineProcess({ id: 't:approve-order', input: { type: 'object' },\n"
        f"  steps: [{{ id: 'approve', task: {{ {task} }} }}] }});\n"
    )
    run = _parked(admin_user, alice, source)
    assert (run.state, ledger(run)) == ("failed", [("approve", "failed", code)])
    assert not HumanTask.objects.exists()


def test_a_run_stopped_at_its_task_asks_again_when_resumed(admin_user, alice, bob):
    from datetime import timedelta

    from django.utils import timezone

    from processes.models import Process

    run = _parked(admin_user, alice, approval(timeout="1h"))
    task = HumanTask.objects.get(run=run)
    # Switched off while parked: the run's next delivery (here its due time) stops it there.
    Process.objects.filter(pk=run.process_id).update(is_enabled=False)
    ProcessRun.objects.filter(pk=run.pk).update(wake_at=timezone.now() - timedelta(seconds=1))
    pump()
    run.refresh_from_db()
    task.refresh_from_db()
    assert (run.state, run.outstanding) == ("committed", 2)
    assert (task.state, task.reason) == (
        "cancelled",
        "its run ended committed before anyone decided",
    )
    Process.objects.filter(pk=run.process_id).update(is_enabled=True)
    assert client_for(alice).post(f"/v1/processes/runs/{run.pk}/resume").status_code == 202
    pump()
    run.refresh_from_db()
    task.refresh_from_db()
    assert (run.pending_reason, task.state, task.reason) == ("awaitingAction", "open", "")
    assert task.expires_at > timezone.now() + timedelta(minutes=59)  # counted from the resume
    client_for(bob).post(
        f"/v1/tasks/{task.pk}/complete", {"output": {"note": "again"}}, format="json"
    )
    pump()
    run.refresh_from_db()
    assert run.state == "committed" and run.outstanding == 0, run.reason
    assert Record.reads.get(record_type="salesOrder").fields["memo"] == "PO-7: again"
