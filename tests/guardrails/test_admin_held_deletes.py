"""Compliance → Guardrails: held deletes approved and rejected in the admin, each with a reason."""

from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.test import Client

from guardrails.models import HeldDelete
from kernel.audit import AuditEvent
from records.boundary import record_create, record_delete
from records.models import Record, RecordWriteState, WriteTrail
from records.trail import Actor
from records.verdicts import held_delete_decide
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

GUARDRAILS = "/admin/guardrails/guardrail/"


def _held(user, name: str, **actor) -> tuple[Record, HeldDelete]:
    record = record_create(
        actor=Actor(user=user), record_type="customer", parent={"company_name": name}
    ).record
    record_delete(actor=Actor(user=user, **actor), record_type="customer", pg_row_id=record.pk)
    return record, HeldDelete.objects.get(pg_row_id=record.pk)


def _messages(res) -> list[str]:
    return [str(m) for m in res.context["messages"]]


def _state(*pairs: tuple[Record, HeldDelete]) -> list[tuple]:
    out = []
    for record, held in pairs:
        record.refresh_from_db()
        held.refresh_from_db()
        out.append((held.status, held.note, record.sync_state))
    return out


def test_the_list_has_approve_and_reject_buttons_for_pending_rows_only(alice, admin_user, operator):
    _, pending = _held(
        alice, "A", process_run_id="4b1f0c7e-0000-0000-0000-000000000001", process_step="po"
    )
    _, decided = _held(alice, "B")
    held_delete_decide(held_id=decided.pk, approve=False, by=admin_user, note="kept")
    page = operator.get(GUARDRAILS).content.decode()
    assert f"{GUARDRAILS}{pending.pk}/decide/approve/" in page
    assert f"{GUARDRAILS}{pending.pk}/decide/reject/" in page
    assert f"{GUARDRAILS}{decided.pk}/decide/" not in page
    assert "/admin/processes/processrun/4b1f0c7e-0000-0000-0000-000000000001/change/" in page


def test_the_page_of_a_hold_shows_the_record_requester_run_and_step_and_saves_nothing(
    alice, operator
):
    run_id = "4b1f0c7e-0000-0000-0000-000000000001"
    record, held = _held(alice, "Acme Ltd", process_run_id=run_id, process_step="raise-po")
    res = operator.get(f"{GUARDRAILS}{held.pk}/change/")
    assert res.status_code == 200
    page = res.content.decode()
    assert "<tr><th>company_name</th><td>Acme Ltd</td></tr>" in page
    assert f'<a href="/admin/processes/processrun/{run_id}/change/#ledger">raise-po</a>' in page
    assert f"/admin/records/record/{record.pk}/change/" in page
    assert f'<a href="/admin/auth/user/{alice.pk}/change/">alice</a>' in page  # the requester
    assert 'name="_save"' not in page and 'name="_continue"' not in page
    assert f"{GUARDRAILS}{held.pk}/decide/approve/" in page
    # Posting the change form changes nothing: the page is read-only.
    before = _state((record, held))
    assert (
        operator.post(f"{GUARDRAILS}{held.pk}/change/", {"status": "approved"}).status_code == 403
    )
    assert _state((record, held)) == before


def test_approve_with_a_reason_decides_through_the_service_and_audits(alice, admin_user, operator):
    record, held = _held(alice, "A")
    url = f"{GUARDRAILS}{held.pk}/decide/approve/"
    form = operator.get(url)
    assert form.status_code == 200
    assert "the delete is sent to the source system" in form.content.decode()
    res = operator.post(url, {"reason": "duplicate of C-102"}, follow=True)
    assert res.status_code == 200
    assert _messages(res) == [f"held delete #{held.pk} approved"]
    assert _state((record, held)) == [("approved", "duplicate of C-102", "deleting")]
    assert RecordWriteState.reads.get(record=record, operation="delete").status == "pending"
    trail = WriteTrail.reads.order_by("-id").first()
    assert (trail.outcome, trail.actor_id, trail.message) == (
        "approved",
        admin_user.pk,
        "duplicate of C-102",
    )
    event = AuditEvent.objects.get()
    assert (
        event.actor_name,
        event.action,
        event.target,
        event.reason,
        event.before,
        event.after,
    ) == (
        "root",
        "held_delete.approved",
        f"held_delete:{held.pk}",
        "duplicate of C-102",
        {"status": "pending"},
        {"status": "approved", "recordType": "customer", "pgRowId": str(record.pk)},
    )


def test_reject_with_a_reason_brings_the_record_back(alice, operator):
    record, held = _held(alice, "A")
    res = operator.post(
        f"{GUARDRAILS}{held.pk}/decide/reject/", {"reason": "still a customer"}, follow=True
    )
    assert _messages(res) == [f"held delete #{held.pk} rejected"]
    assert _state((record, held)) == [("rejected", "still a customer", "pending")]
    assert AuditEvent.objects.get().action == "held_delete.rejected"


@pytest.mark.parametrize("reason", ["", "   "])
def test_a_decision_without_a_reason_is_refused_and_changes_nothing(alice, operator, reason):
    record, held = _held(alice, "A")
    res = operator.post(f"{GUARDRAILS}{held.pk}/decide/approve/", {"reason": reason})
    assert res.status_code == 200
    assert (
        "Give a reason: it is kept with the decision and in the audit trail."
        in res.content.decode()
    )
    assert _state((record, held)) == [("pending", "", "delete_held")]
    assert AuditEvent.objects.count() == 0


def test_a_decided_hold_is_read_only(alice, admin_user, operator):
    record, held = _held(alice, "A")
    held_delete_decide(held_id=held.pk, approve=False, by=admin_user, note="kept")
    page = operator.get(f"{GUARDRAILS}{held.pk}/change/").content.decode()
    assert "/decide/" not in page
    res = operator.post(
        f"{GUARDRAILS}{held.pk}/decide/approve/", {"reason": "changed my mind"}, follow=True
    )
    assert _messages(res) == [f"held delete #{held.pk} is already rejected"]
    assert _state((record, held)) == [("rejected", "kept", "pending")]
    assert AuditEvent.objects.count() == 1


def test_an_unknown_verdict_or_hold_is_404(alice, operator):
    _, held = _held(alice, "A")
    assert operator.get(f"{GUARDRAILS}{held.pk}/decide/maybe/").status_code == 404
    assert operator.get(f"{GUARDRAILS}999999/decide/approve/").status_code == 404


def test_staff_without_the_change_right_cannot_decide(alice):
    record, held = _held(alice, "A")
    viewer = make_user("viewer")
    viewer.is_staff = True
    viewer.save()
    client = Client()
    client.force_login(viewer)
    assert client.post(f"{GUARDRAILS}{held.pk}/decide/approve/", {"reason": "x"}).status_code == 403
    assert _state((record, held)) == [("pending", "", "delete_held")]


def test_bulk_approve_asks_for_a_reason_then_acts_on_pending_rows_and_reports_counts(
    alice, admin_user, operator
):
    rows = [_held(alice, name) for name in "ABCDE"]
    for _, held in rows[3:]:
        held_delete_decide(held_id=held.pk, approve=False, by=admin_user, note="kept")
    selected = [held.pk for _, held in rows]
    confirm = operator.post(
        GUARDRAILS, {"action": "approve_selected", ACTION_CHECKBOX_NAME: selected}
    )
    assert confirm.status_code == 200
    page = confirm.content.decode()
    assert "3 pending held delete(s) will be approved" in page
    assert "2 already decided will be left as they are." in page
    assert [r[0] for r in _state(*rows)] == ["pending"] * 3 + ["rejected"] * 2
    res = operator.post(
        GUARDRAILS,
        {
            "action": "approve_selected",
            ACTION_CHECKBOX_NAME: selected,
            "confirm": "yes",
            "reason": "year-end clean-up",
        },
        follow=True,
    )
    assert _messages(res) == ["3 approved, 2 already decided"]
    assert (
        _state(*rows)
        == [("approved", "year-end clean-up", "deleting")] * 3
        + [("rejected", "kept", "pending")] * 2
    )
    assert (
        AuditEvent.objects.filter(action="held_delete.approved", reason="year-end clean-up").count()
        == 3
    )


def test_bulk_decision_without_a_reason_changes_nothing(alice, operator):
    rows = [_held(alice, name) for name in "AB"]
    res = operator.post(
        GUARDRAILS,
        {
            "action": "reject_selected",
            "confirm": "yes",
            "reason": "",
            ACTION_CHECKBOX_NAME: [h.pk for _, h in rows],
        },
    )
    assert res.status_code == 200
    assert "Give a reason" in res.content.decode()
    assert [r[0] for r in _state(*rows)] == ["pending", "pending"]
    assert AuditEvent.objects.count() == 0


def test_select_all_carries_the_filter_not_every_id(alice, admin_user, operator):
    rows = [_held(alice, name) for name in "ABC"]
    held_delete_decide(held_id=rows[0][1].pk, approve=True, by=admin_user, note="ok")
    confirm = operator.post(
        f"{GUARDRAILS}?status__exact=pending",
        {
            "action": "reject_selected",
            "select_across": "1",
            "index": "0",
            ACTION_CHECKBOX_NAME: [rows[1][1].pk],
        },
    )
    page = confirm.content.decode()
    assert "2 pending held delete(s) will be rejected" in page
    assert f'name="{ACTION_CHECKBOX_NAME}"' not in page
    res = operator.post(
        f"{GUARDRAILS}?status__exact=pending",
        {
            "action": "reject_selected",
            "select_across": "1",
            "index": "0",
            "confirm": "yes",
            "reason": "not now",
            ACTION_CHECKBOX_NAME: [rows[1][1].pk],
        },
        follow=True,
    )
    assert _messages(res) == ["2 rejected, 0 already decided"]
    assert [r[0] for r in _state(*rows)] == ["approved", "rejected", "rejected"]
