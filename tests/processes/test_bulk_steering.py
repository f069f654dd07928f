"""``POST /v1/processes/runs/bulk``: a preview that changes nothing and fixes the runs; performing
exactly those (a run that ended since is skipped, and says so); over ``steer.approval_over`` a
different administrator approves or rejects (four eyes); progress while it works; one audit event;
refusals naming the field and changing nothing."""

from __future__ import annotations

import pytest
from django.test import Client, TestCase
from rest_framework.test import APIClient

from guardrails.settings import setting_set
from kernel.audit import AuditEvent
from kernel.models import token_issue
from processes.bulk.models import BulkAction
from processes.bulk.service import bulk_advance, bulk_perform
from processes.models import ProcessRun, RunState
from processes.steering import run_cancel
from tests.conftest import client_for, make_user
from tests.processes.engine_support import deploy, invoke
from tests.processes.test_run_search import ORDERS

pytestmark = pytest.mark.django_db

BULK = "/v1/processes/runs/bulk"


@pytest.fixture
def orders(admin_user):
    deploy(ORDERS, by=admin_user, name="processes/orders.ts")


@pytest.fixture
def other_admin(db):
    return make_user("second-root", admin=True)


def _queued(user, count: int, customer: str = "C-1") -> list[ProcessRun]:
    return [invoke("acme:orders", {"customer": customer, "amount": n}, user) for n in range(count)]


def _states(runs) -> list[str]:
    return [ProcessRun.objects.get(pk=run.pk).state for run in runs]


def _preview(api, action="cancel", filter=None):
    body = {"action": action, "filter": filter or {"processId": "acme:orders"}, "preview": True}
    response = api.post(BULK, body, format="json")
    assert response.status_code == 200, response.content
    return body, response.json()


def _submit(api, body, bulk_id):
    return api.post(BULK, {**body, "preview": False, "bulkId": bulk_id}, format="json")


def test_a_preview_counts_and_fixes_the_runs_and_changes_nothing(orders, alice, admin_api):
    runs = _queued(alice, 12)
    done = _queued(alice, 1)
    run_cancel(user=alice, run_id=str(done[0].pk))  # ended: a cancel does not apply to it
    _, preview = _preview(admin_api, filter={"processId": "acme:orders", "input.customer": "C-1"})
    assert preview["count"] == 12
    assert len(preview["sample"]) == 10
    newest = sorted(runs, key=lambda r: (r.created_at, r.pk), reverse=True)[:10]
    assert [run["runId"] for run in preview["sample"]] == [str(r.pk) for r in newest]
    assert set(_states(runs)) == {"queued"}
    bulk = BulkAction.objects.get(pk=preview["bulkId"])
    assert (bulk.status, sorted(bulk.run_ids)) == ("previewed", sorted(str(r.pk) for r in runs))
    assert not AuditEvent.objects.filter(action__startswith="runs.bulk").exists()


def test_performing_steers_exactly_the_previewed_runs_and_skips_what_ended_since(
    orders, alice, admin_user, admin_api
):
    runs = _queued(alice, 4)
    body, preview = _preview(admin_api)
    later = _queued(alice, 1)  # started after the preview: not counted, not touched
    run_cancel(user=alice, run_id=str(runs[0].pk))  # ended between the preview and the action
    with TestCase.captureOnCommitCallbacks(execute=False):
        submitted = _submit(admin_api, body, preview["bulkId"])
    assert (submitted.status_code, submitted.json()["state"]) == (202, "running")
    bulk_perform(preview["bulkId"])
    assert _states(runs) == ["cancelled"] * 4
    assert _states(later) == ["queued"]
    shown = admin_api.get(f"{BULK}/{preview['bulkId']}").json()
    assert {k: shown[k] for k in ("state", "count", "done", "skipped", "failed")} == {
        "state": "done",
        "count": 4,
        "done": 3,
        "skipped": 1,
        "failed": 0,
    }
    assert shown["skips"] == [
        {"runId": str(runs[0].pk), "outcome": "skipped", "why": "it had ended cancelled"}
    ]
    event = AuditEvent.objects.get(action="runs.bulk")
    assert (event.actor, event.target) == (admin_user, f"bulk:{preview['bulkId']}")
    assert event.after == {
        "action": "cancel",
        "filter": {"processId": "acme:orders"},
        "count": 4,
        "done": 3,
        "skipped": 1,
        "failed": 0,
        "requestedBy": "root",
        "approvedBy": None,
    }


def test_progress_is_visible_while_it_works(orders, alice, admin_api):
    runs = _queued(alice, 5)
    body, preview = _preview(admin_api)
    _submit(admin_api, body, preview["bulkId"])
    assert bulk_advance(preview["bulkId"], batch=2) is True
    shown = admin_api.get(f"{BULK}/{preview['bulkId']}").json()
    assert (shown["state"], shown["done"]) == ("running", 2)
    bulk_perform(preview["bulkId"])
    assert admin_api.get(f"{BULK}/{preview['bulkId']}").json()["done"] == 5
    assert bulk_advance(preview["bulkId"]) is False  # a second worker finds nothing left
    assert _states(runs) == ["cancelled"] * 5


def test_over_the_threshold_another_administrator_approves(orders, alice, admin_api, other_admin):
    setting_set("steer.approval_over", 2)
    runs = _queued(alice, 3)
    body, preview = _preview(admin_api)
    bulk_id = preview["bulkId"]
    submitted = _submit(admin_api, body, bulk_id)
    assert (submitted.status_code, submitted.json()) == (
        202,
        {"bulkId": bulk_id, "state": "awaiting_approval"},
    )
    own = admin_api.post(f"{BULK}/{bulk_id}/approve")
    assert (own.status_code, own.json()["error"]) == (403, "four_eyes")
    assert _states(runs) == ["queued"] * 3
    approved = client_for(other_admin).post(f"{BULK}/{bulk_id}/approve")
    assert (approved.status_code, approved.json()["state"]) == (200, "running")
    bulk_perform(bulk_id)
    assert _states(runs) == ["cancelled"] * 3
    assert AuditEvent.objects.get(action="runs.bulk").after["approvedBy"] == "second-root"
    again = client_for(other_admin).post(f"{BULK}/{bulk_id}/approve")
    assert (again.status_code, again.json()["error"]) == (409, "bulk_action_used")


def test_a_rejected_action_never_runs(orders, alice, admin_api, other_admin):
    setting_set("steer.approval_over", 0)
    runs = _queued(alice, 1)
    body, preview = _preview(admin_api)
    _submit(admin_api, body, preview["bulkId"])
    checker = client_for(other_admin)
    unsaid = checker.post(f"{BULK}/{preview['bulkId']}/reject", {}, format="json")
    assert (unsaid.status_code, unsaid.json()["rejection"]["field"]) == (400, "reason")
    rejected = checker.post(
        f"{BULK}/{preview['bulkId']}/reject", {"reason": "wrong customer"}, format="json"
    )
    assert (rejected.status_code, rejected.json()["state"], rejected.json()["reason"]) == (
        200,
        "rejected",
        "wrong customer",
    )
    bulk_perform(preview["bulkId"])
    assert _states(runs) == ["queued"]
    event = AuditEvent.objects.get(action="runs.bulk_rejected")
    assert (event.actor, event.reason) == (other_admin, "wrong customer")


def test_retry_starts_a_linked_run_for_each_failed_one(orders, alice, admin_api):
    runs = _queued(alice, 2)
    for run in runs:
        run_cancel(user=alice, run_id=str(run.pk))
    body, preview = _preview(admin_api, action="retry")
    assert preview["count"] == 2
    _submit(admin_api, body, preview["bulkId"])
    bulk_perform(preview["bulkId"])
    for run in runs:
        assert ProcessRun.objects.get(linked_from=run).state == RunState.QUEUED


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": "delete", "filter": {}, "preview": True}, "action"),
        ({"action": "cancel", "filter": {"nope": "x"}, "preview": True}, "filter.nope"),
        ({"action": "cancel", "filter": {"state": "done"}, "preview": True}, "filter.state"),
        ({"action": "cancel", "filter": {"processId": 5}, "preview": True}, "filter.processId"),
        ({"action": "cancel", "filter": {"input.memo": "x"}, "preview": True}, "filter.input.memo"),
        ({"action": "cancel", "filter": [], "preview": True}, "filter"),
        ({"action": "cancel", "filter": {}, "preview": "yes"}, "preview"),
        ({"action": "cancel", "filter": {}, "preview": False}, "bulkId"),
    ],
)
def test_bad_input_is_refused_by_name_and_changes_nothing(orders, alice, admin_api, body, field):
    runs = _queued(alice, 1)
    response = admin_api.post(BULK, body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["rejection"]["field"] == field
    assert not BulkAction.objects.exists()
    assert _states(runs) == ["queued"]


def test_a_bulk_id_not_yours_or_used_or_changed(orders, alice, bob, alice_api, bob_api):
    runs = _queued(alice, 1)
    body, preview = _preview(alice_api)
    assert _submit(bob_api, body, preview["bulkId"]).status_code == 404
    assert bob_api.get(f"{BULK}/{preview['bulkId']}").status_code == 404
    changed = _submit(alice_api, {**body, "action": "retry"}, preview["bulkId"])
    assert (changed.status_code, changed.json()["rejection"]["field"]) == (400, "action")
    assert _submit(alice_api, body, preview["bulkId"]).status_code == 202
    used = _submit(alice_api, body, preview["bulkId"])
    assert (used.status_code, used.json()["error"]) == (409, "bulk_action_used")
    bulk_perform(preview["bulkId"])
    assert _states(runs) == ["cancelled"]


def test_a_person_steers_only_their_own_runs(orders, alice, bob, alice_api):
    mine = _queued(alice, 1)
    theirs = _queued(bob, 1)
    body, preview = _preview(alice_api)
    assert preview["count"] == 1
    _submit(alice_api, body, preview["bulkId"])
    bulk_perform(preview["bulkId"])
    assert (_states(mine), _states(theirs)) == (["cancelled"], ["queued"])


def test_a_token_steers_only_as_an_administrator(orders, alice):
    _, raw = token_issue(user=alice, scopes=["extensions:deploy"])
    response = APIClient().post(
        BULK,
        {"action": "cancel", "filter": {}, "preview": True},
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
    )
    assert (response.status_code, response.json()["error"]) == (403, "admin_required")


def test_the_admin_screen_approves_another_administrators_action(
    orders, alice, admin_api, other_admin, operator
):
    setting_set("steer.approval_over", 0)
    runs = _queued(alice, 1)
    body, preview = _preview(admin_api)
    _submit(admin_api, body, preview["bulkId"])
    screen = "/admin/processes/bulkaction/"
    assert preview["bulkId"] in operator.get(screen).content.decode()
    own = operator.post(
        screen, {"action": "approve", "_selected_action": [preview["bulkId"]]}, follow=True
    )
    assert "another administrator must approve" in own.content.decode()
    assert BulkAction.objects.get(pk=preview["bulkId"]).status == "awaiting_approval"
    checker = Client()
    checker.force_login(other_admin)
    checker.post(screen, {"action": "approve", "_selected_action": [preview["bulkId"]]})
    assert BulkAction.objects.get(pk=preview["bulkId"]).status == "running"
    bulk_perform(preview["bulkId"])
    assert _states(runs) == ["cancelled"]


def test_the_admin_screen_rejects_with_the_reason_the_administrator_gives(
    orders, alice, admin_api, other_admin
):
    setting_set("steer.approval_over", 0)
    runs = _queued(alice, 1)
    body, preview = _preview(admin_api)
    _submit(admin_api, body, preview["bulkId"])
    screen = "/admin/processes/bulkaction/"
    checker = Client()
    checker.force_login(other_admin)
    chosen = {"action": "reject", "_selected_action": [preview["bulkId"]]}
    asked = checker.post(screen, chosen)
    assert (asked.status_code, "Why is it rejected?" in asked.content.decode()) == (200, True)
    unsaid = checker.post(screen, {**chosen, "apply": "Reject", "reason": "  "})
    assert "Say why it is rejected." in unsaid.content.decode()
    assert BulkAction.objects.get(pk=preview["bulkId"]).status == "awaiting_approval"
    checker.post(screen, {**chosen, "apply": "Reject", "reason": "wrong customer"})
    bulk = BulkAction.objects.get(pk=preview["bulkId"])
    assert (bulk.status, bulk.reason, bulk.approved_by) == (
        "rejected",
        "wrong customer",
        other_admin,
    )
    bulk_perform(preview["bulkId"])
    assert _states(runs) == ["queued"]
    event = AuditEvent.objects.get(action="runs.bulk_rejected")
    assert (event.actor, event.reason) == (other_admin, "wrong customer")
