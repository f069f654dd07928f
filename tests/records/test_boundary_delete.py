"""record_delete through DELETE /v1/data: app-owned, held, audited, denied, capped, rolled back."""

from __future__ import annotations

import pytest

from guardrails.models import HeldDelete, WindowEvent
from guardrails.rules import rule_set
from guardrails.settings import setting_set
from records.boundary import DeleteWindowWait, record_create, record_delete
from records.catalog import record_type_get
from records.models import Record, RecordWriteState, WriteTrail
from records.policies import records_visible
from records.trail import Actor
from records.verdicts import Verdict, held_delete_decide, verdict_apply

pytestmark = pytest.mark.django_db


def _customer(user, name: str = "Acme") -> Record:
    return record_create(
        actor=Actor(user=user), record_type="customer", parent={"company_name": name}
    ).record


def _visible(user, record_type: str = "customer") -> list[str]:
    return [
        str(pk)
        for pk in records_visible(user=user, record_type=record_type_get(record_type)).values_list(
            "pg_row_id", flat=True
        )
    ]


def _delete(api, record: Record, record_type: str = "customer"):
    return api.delete(f"/v1/data/{record_type}", {"pgRowId": str(record.pk)}, format="json")


def test_app_owned_record_is_removed_at_once(alice, alice_api):
    record = record_create(
        actor=Actor(user=alice), record_type="legacy_customer", parent={"name": "a"}
    ).record
    res = _delete(alice_api, record, "legacy_customer")
    assert res.status_code == 200, res.content
    assert res.json()["outcome"] == "deleted"
    assert res.json()["pgRowId"] == str(record.pk)
    assert "notice" not in res.json()
    assert not Record.reads.filter(pk=record.pk).exists()
    assert RecordWriteState.reads.count() == 0
    assert HeldDelete.objects.count() == 0
    assert (
        WindowEvent.objects.count() == 0
    )  # nothing reaches a connected system, nothing is charged
    trail = WriteTrail.reads.get(action="delete")
    assert (trail.outcome, trail.pg_row_id) == ("allowed", record.pk)


def test_connected_delete_on_a_stock_instance_is_held(alice, alice_api):
    record = _customer(alice)
    res = _delete(alice_api, record)
    assert res.status_code == 202, res.content
    body = res.json()
    assert body["outcome"] == "held"
    assert body["syncState"] == "delete_held"
    assert body["notice"] == {
        "code": "SOURCE_AWAITING_CONFIRMATION",
        "field": None,
        "message": "the delete is held for an operator's approval; the record is hidden until then",
    }
    record.refresh_from_db()
    assert record.sync_state == "delete_held"
    assert _visible(alice) == []
    held = HeldDelete.objects.get()
    assert (held.status, held.record_type, held.pg_row_id, held.requested_by_id) == (
        "pending",
        "customer",
        record.pk,
        alice.pk,
    )
    state = RecordWriteState.reads.get(record=record, operation="delete")
    assert (state.status, state.payload) == ("held", {"prior_state": "pending"})
    trail = WriteTrail.reads.get(action="delete")
    assert (trail.outcome, trail.code) == ("held", "SOURCE_AWAITING_CONFIRMATION")
    assert WindowEvent.objects.filter(kind="delete").count() == 1


def test_second_delete_of_a_held_record_is_404(alice, alice_api):
    record = _customer(alice)
    assert _delete(alice_api, record).status_code == 202
    res = _delete(alice_api, record)
    assert res.status_code == 404
    assert res.json()["rejection"]["code"] == "RECORD_NOT_FOUND"
    assert HeldDelete.objects.count() == 1
    assert WindowEvent.objects.count() == 1


def test_a_held_record_cannot_be_updated(alice, alice_api):
    record = _customer(alice)
    _delete(alice_api, record)
    res = alice_api.patch(
        "/v1/data/customer", {"pgRowId": str(record.pk), "parent": {"memo": "x"}}, format="json"
    )
    assert res.status_code == 404


def test_allow_with_audit_removes_the_hold_and_keeps_the_trail(alice, alice_api):
    rule_set(record_type="customer", action="delete", decision="allow_with_audit")
    record = _customer(alice)
    res = _delete(alice_api, record)
    assert res.status_code == 202
    assert res.json()["outcome"] == "queued"
    assert res.json()["syncState"] == "deleting"
    assert "notice" not in res.json()
    assert HeldDelete.objects.count() == 0
    assert _visible(alice) == []
    state = RecordWriteState.reads.get(record=record, operation="delete")
    assert state.status == "pending"
    trail = WriteTrail.reads.get(action="delete")
    assert (trail.outcome, trail.code, trail.actor_id) == ("allowed", "ALLOW_WITH_AUDIT", alice.pk)


def test_deny_rule_refuses_and_changes_nothing(alice, alice_api):
    rule_set(record_type="customer", action="delete", decision="deny")
    record = _customer(alice)
    res = _delete(alice_api, record)
    assert res.status_code == 403
    assert res.json() == {
        "error": "write_refused",
        "rejection": {
            "code": "GUARDRAIL_DENIED",
            "field": None,
            "message": "the guardrail rule customer.delete denies this write",
        },
    }
    record.refresh_from_db()
    assert record.sync_state == "pending"
    assert _visible(alice) == [str(record.pk)]
    assert RecordWriteState.reads.filter(operation="delete").count() == 0
    assert HeldDelete.objects.count() == 0
    assert WindowEvent.objects.count() == 0
    trail = WriteTrail.reads.get(action="delete")
    assert (trail.outcome, trail.code) == ("refused", "GUARDRAIL_DENIED")


def test_over_the_ordinary_cap_is_refused_naming_the_cap(alice, alice_api):
    setting_set("guardrails.max_deletes_per_min", 1)
    first, second = _customer(alice, "A"), _customer(alice, "B")
    assert _delete(alice_api, first).status_code == 202
    res = _delete(alice_api, second)
    assert res.status_code == 429
    body = res.json()
    assert body["error"] == "write_refused"
    assert body["rejection"]["code"] == "DELETE_CAP_EXCEEDED"
    assert body["rejection"]["field"] == "guardrails.max_deletes_per_min"
    assert body["rejection"]["message"].startswith(
        "delete refused, the record stays: guardrails.max_deletes_per_min (1) reached for netsuite"
    )
    second.refresh_from_db()
    assert second.sync_state == "pending"
    assert _visible(alice) == [str(second.pk)]
    assert HeldDelete.objects.count() == 1  # the first one only
    assert WindowEvent.objects.filter(kind="delete").count() == 1  # the refusal charged nothing
    assert RecordWriteState.reads.filter(record=second, operation="delete").count() == 0
    trail = WriteTrail.reads.filter(action="delete").order_by("-id").first()
    assert (trail.outcome, trail.code, trail.field) == (
        "refused",
        "DELETE_CAP_EXCEEDED",
        "guardrails.max_deletes_per_min",
    )


def test_hour_cap_is_named_when_it_binds(alice, alice_api):
    setting_set("guardrails.max_deletes_per_hour", 1)
    first, second = _customer(alice, "A"), _customer(alice, "B")
    _delete(alice_api, first)
    res = _delete(alice_api, second)
    assert res.status_code == 429
    assert res.json()["rejection"]["field"] == "guardrails.max_deletes_per_hour"


def test_ordinary_delete_may_wait_instead_of_refusing(alice):
    setting_set("guardrails.max_deletes_per_min", 0)
    record = _customer(alice)
    with pytest.raises(DeleteWindowWait) as caught:
        record_delete(
            actor=Actor(user=alice), record_type="customer", pg_row_id=record.pk, on_cap="wait"
        )
    assert caught.value.cap == "guardrails.max_deletes_per_min"
    record.refresh_from_db()
    assert record.sync_state == "pending"


def test_delete_by_external_id_with_source_system_qualifier(alice, alice_api):
    rule_set(record_type="customer", action="delete", decision="allow")
    record = _customer(alice)
    state = RecordWriteState.reads.get(record=record)
    verdict_apply(write_state_id=state.pk, verdict=Verdict("confirmed", external_id="CUS-9"))
    wrong = alice_api.delete(
        "/v1/data/customer", {"externalId": "CUS-9", "sourceSystem": "other"}, format="json"
    )
    assert wrong.status_code == 404
    res = alice_api.delete(
        "/v1/data/customer", {"externalId": "CUS-9", "sourceSystem": "netsuite"}, format="json"
    )
    assert res.status_code == 202
    assert res.json()["outcome"] == "queued"
    delete = RecordWriteState.reads.get(record=record, operation="delete")
    assert delete.payload == {"prior_state": "synced"}


@pytest.mark.parametrize(
    "body", [{}, {"pgRowId": "00000000-0000-0000-0000-000000000001", "externalId": "X"}]
)
def test_delete_needs_exactly_one_address(alice, alice_api, body):
    _customer(alice)
    res = alice_api.delete("/v1/data/customer", body, format="json")
    assert res.status_code == 400
    assert res.json()["rejection"]["field"] == "pgRowId"


def test_delete_malformed_uuid_is_404(alice, alice_api):
    _customer(alice)
    res = alice_api.delete("/v1/data/customer", {"pgRowId": "zzz"}, format="json")
    assert res.status_code == 404


# -- held delete decisions -------------------------------------------------------------------


def test_approve_sends_the_delete_and_keeps_the_record_hidden(alice, admin_user, alice_api):
    record = _customer(alice)
    _delete(alice_api, record)
    held = held_delete_decide(held_id=HeldDelete.objects.get().pk, approve=True, by=admin_user)
    assert (held.status, held.decided_by_id) == ("approved", admin_user.pk)
    record.refresh_from_db()
    assert record.sync_state == "deleting"
    assert _visible(alice) == []
    assert RecordWriteState.reads.get(record=record, operation="delete").status == "pending"
    trail = WriteTrail.reads.filter(action="delete").order_by("-id").first()
    assert (trail.outcome, trail.actor_id) == ("approved", admin_user.pk)


def test_reject_brings_the_record_back_in_its_prior_state(alice, admin_user, alice_api):
    record = _customer(alice)
    state = RecordWriteState.reads.get(record=record)
    verdict_apply(write_state_id=state.pk, verdict=Verdict("confirmed", external_id="CUS-3"))
    _delete(alice_api, record)
    held_delete_decide(
        held_id=HeldDelete.objects.get().pk, approve=False, by=admin_user, note="keep it"
    )
    record.refresh_from_db()
    assert (record.sync_state, record.external_id) == ("synced", "CUS-3")
    assert _visible(alice) == [str(record.pk)]
    delete = RecordWriteState.reads.get(record=record, operation="delete")
    assert (delete.status, delete.message) == ("cancelled", "keep it")
    trail = WriteTrail.reads.filter(action="delete").order_by("-id").first()
    assert (trail.outcome, trail.message) == ("rejected", "keep it")


def test_create_confirmed_while_delete_held_keeps_record_hidden(alice, admin_user, alice_api):
    """The source confirming the create must not un-hide a record whose delete is held."""
    record = _customer(alice)
    create = RecordWriteState.reads.get(record=record, operation="create")
    _delete(alice_api, record)
    verdict_apply(write_state_id=create.pk, verdict=Verdict("confirmed", external_id="CUS-5"))
    record.refresh_from_db()
    assert (record.sync_state, record.external_id) == ("delete_held", "CUS-5")
    assert _visible(alice) == []
    # Rejected later, the record comes back as the source now knows it: synced.
    held_delete_decide(held_id=HeldDelete.objects.get().pk, approve=False, by=admin_user)
    record.refresh_from_db()
    assert record.sync_state == "synced"


# -- the rollback window ---------------------------------------------------------------------


def test_rollback_delete_is_never_held_and_skips_the_ordinary_cap(alice):
    setting_set("guardrails.max_deletes_per_min", 0)
    record = _customer(alice)
    result = record_delete(
        actor=Actor(user=alice), record_type="customer", pg_row_id=record.pk, rollback=True
    )
    assert result.outcome == "queued"
    record.refresh_from_db()
    assert record.sync_state == "deleting"
    assert HeldDelete.objects.count() == 0
    assert RecordWriteState.reads.get(record=record, operation="delete").status == "pending"
    assert list(WindowEvent.objects.values_list("kind", flat=True)) == ["rollback"]


def test_rollback_over_its_cap_waits_and_leaves_the_record(alice):
    setting_set("guardrails.max_rollback_deletes_per_min", 1)
    first, second = _customer(alice, "A"), _customer(alice, "B")
    record_delete(
        actor=Actor(user=alice), record_type="customer", pg_row_id=first.pk, rollback=True
    )
    trail_rows = WriteTrail.reads.count()
    with pytest.raises(DeleteWindowWait) as caught:
        record_delete(
            actor=Actor(user=alice), record_type="customer", pg_row_id=second.pk, rollback=True
        )
    assert caught.value.cap == "guardrails.max_rollback_deletes_per_min"
    assert caught.value.retryable is True
    event = WindowEvent.objects.get(kind="rollback")
    assert caught.value.retry_at == event.at + __import__("datetime").timedelta(minutes=1)
    second.refresh_from_db()
    assert second.sync_state == "pending"
    assert RecordWriteState.reads.filter(record=second, operation="delete").count() == 0
    assert WindowEvent.objects.count() == 1
    assert WriteTrail.reads.count() == trail_rows  # a wait is not a refusal


def test_rollback_deletes_do_not_count_against_the_ordinary_cap(alice, alice_api):
    setting_set("guardrails.max_deletes_per_min", 1)
    first, second = _customer(alice, "A"), _customer(alice, "B")
    record_delete(
        actor=Actor(user=alice), record_type="customer", pg_row_id=first.pk, rollback=True
    )
    assert _delete(alice_api, second).status_code == 202
