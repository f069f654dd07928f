"""/v1/guardrails/held-deletes: administrators list, approve and reject held deletes."""

from __future__ import annotations

import pytest

from guardrails.models import HeldDelete
from records.boundary import record_create, record_delete
from records.catalog import record_type_get
from records.models import Record, RecordWriteState, WriteTrail
from records.policies import records_visible
from records.trail import Actor

pytestmark = pytest.mark.django_db

BASE = "/v1/guardrails/held-deletes"


def _held(user, name: str = "Acme", **actor) -> tuple[Record, HeldDelete]:
    record = record_create(
        actor=Actor(user=user), record_type="customer", parent={"company_name": name}
    ).record
    result = record_delete(
        actor=Actor(user=user, **actor), record_type="customer", pg_row_id=record.pk
    )
    assert result.outcome == "held"
    return record, HeldDelete.objects.get(pg_row_id=record.pk)


def _visible(user) -> list[Record]:
    return list(records_visible(user=user, record_type=record_type_get("customer")))


def test_list_shows_pending_first_with_requester_and_run(alice, admin_user, admin_api):
    _, older = _held(alice, "A", process_run_id="r1", process_step="po")
    _, decided = _held(alice, "B")
    _, newer = _held(alice, "C")
    admin_api.post(f"{BASE}/{decided.pk}/reject", format="json")
    res = admin_api.get(BASE)
    assert res.status_code == 200
    rows = res.json()["heldDeletes"]
    assert [(r["id"], r["status"]) for r in rows] == [
        (older.pk, "pending"),
        (newer.pk, "pending"),
        (decided.pk, "rejected"),
    ]
    first = rows[0]
    assert first == {
        "id": older.pk,
        "recordType": "customer",
        "pgRowId": str(older.pg_row_id),
        "externalId": None,
        "sourceSystem": "netsuite",
        "status": "pending",
        "requestedBy": "alice",
        "requestedAt": older.requested_at.isoformat(),
        "processRunId": "r1",
        "processStep": "po",
        "decidedBy": None,
        "decidedAt": None,
        "note": "",
    }
    assert rows[2]["decidedBy"] == "root"
    only_pending = admin_api.get(BASE, {"status": "pending"}).json()["heldDeletes"]
    assert [r["id"] for r in only_pending] == [older.pk, newer.pk]


def test_list_refuses_an_unknown_status(admin_api):
    res = admin_api.get(BASE, {"status": "maybe"})
    assert res.status_code == 400
    assert res.json()["rejection"]["field"] == "status"


def test_approve_sends_the_delete_and_keeps_the_record_hidden(
    alice, admin_user, admin_api, django_capture_on_commit_callbacks
):
    record, held = _held(alice)
    from records.hooks import hook_register

    seen = []
    unregister = hook_register(
        slot="after_delete", record_type="customer", hook=lambda ctx: seen.append(ctx.record)
    )
    try:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            res = admin_api.post(
                f"{BASE}/{held.pk}/approve", {"note": "ok by finance"}, format="json"
            )
    finally:
        unregister()
    assert res.status_code == 200, res.content
    # After commit: the outbound worker is woken, and the after_delete hooks run on the approval.
    assert len(callbacks) == 2
    assert [r["pgRowId"] for r in seen] == [str(record.pk)]
    body = res.json()
    assert (body["status"], body["decidedBy"], body["note"]) == (
        "approved",
        "root",
        "ok by finance",
    )
    record.refresh_from_db()
    assert record.sync_state == "deleting"
    assert _visible(alice) == []
    assert RecordWriteState.reads.get(record=record, operation="delete").status == "pending"
    trail = WriteTrail.reads.order_by("-id").first()
    assert (trail.outcome, trail.actor_id, trail.message) == (
        "approved",
        admin_user.pk,
        "ok by finance",
    )


def test_reject_brings_the_record_back(alice, admin_api):
    record, held = _held(alice)
    res = admin_api.post(f"{BASE}/{held.pk}/reject", format="json")
    assert res.status_code == 200
    assert (res.json()["status"], res.json()["note"]) == ("rejected", "")
    record.refresh_from_db()
    assert record.sync_state == "pending"  # its state before the delete was asked for
    assert _visible(alice) == [record]
    delete = RecordWriteState.reads.get(record=record, operation="delete")
    assert (delete.status, delete.message) == ("cancelled", "rejected by an operator")


def test_a_rejected_record_can_be_deleted_again(alice, alice_api, admin_api):
    record, held = _held(alice)
    admin_api.post(f"{BASE}/{held.pk}/reject", format="json")
    res = alice_api.delete("/v1/data/customer", {"pgRowId": str(record.pk)}, format="json")
    assert res.status_code == 202
    assert HeldDelete.objects.filter(pg_row_id=record.pk, status="pending").count() == 1


@pytest.mark.parametrize("verb", ["approve", "reject"])
def test_non_admin_is_refused_and_nothing_changes(alice, alice_api, verb):
    record, held = _held(alice)
    res = alice_api.post(f"{BASE}/{held.pk}/{verb}", format="json")
    assert res.status_code == 403
    assert res.json()["error"] == "admin_required"
    held.refresh_from_db()
    record.refresh_from_db()
    assert (held.status, record.sync_state) == ("pending", "delete_held")


def test_non_admin_cannot_list(alice_api):
    res = alice_api.get(BASE)
    assert res.status_code == 403
    assert res.json() == {
        "error": "admin_required",
        "message": "only an administrator may see and decide held deletes",
    }


def test_anonymous_is_401(client):
    assert client.get(BASE).status_code == 401


@pytest.mark.parametrize(
    "first, second", [("approve", "reject"), ("reject", "approve"), ("approve", "approve")]
)
def test_already_decided_is_409(alice, admin_api, first, second):
    record, held = _held(alice)
    admin_api.post(f"{BASE}/{held.pk}/{first}", format="json")
    record.refresh_from_db()
    state_before = record.sync_state
    trail_rows = WriteTrail.reads.count()
    res = admin_api.post(f"{BASE}/{held.pk}/{second}", format="json")
    assert res.status_code == 409
    expected = "approved" if first == "approve" else "rejected"
    assert res.json() == {
        "error": "conflict",
        "rejection": {
            "code": "HELD_DELETE_NOT_PENDING",
            "field": "id",
            "message": f"held delete #{held.pk} is already {expected}",
        },
    }
    record.refresh_from_db()
    assert record.sync_state == state_before
    assert WriteTrail.reads.count() == trail_rows


def test_unknown_held_delete_is_404(admin_api):
    res = admin_api.post(f"{BASE}/999999/approve", format="json")
    assert res.status_code == 404
    assert res.json() == {"error": "held_delete_not_found", "id": 999999}


def test_note_must_be_a_string(alice, admin_api):
    record, held = _held(alice)
    res = admin_api.post(f"{BASE}/{held.pk}/approve", {"note": 5}, format="json")
    assert res.status_code == 400
    assert res.json()["rejection"]["field"] == "note"
    held.refresh_from_db()
    assert held.status == "pending"
