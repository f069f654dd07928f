"""The operator's admin: Compliance → Guardrails, Settings → Write guardrails, read-only records."""

from __future__ import annotations

import pytest
from django.test import Client

from guardrails.models import GuardrailRule, HeldDelete
from records.boundary import record_create, record_delete
from records.models import Record, WriteTrail
from records.trail import Actor
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

GUARDRAILS = "/admin/guardrails/guardrail/"
WRITE_GUARDRAILS = "/admin/instance_settings/writeguardrail/"


def _held(user, name: str) -> tuple[Record, HeldDelete]:
    record = record_create(
        actor=Actor(user=user), record_type="customer", parent={"company_name": name}
    ).record
    record_delete(actor=Actor(user=user), record_type="customer", pg_row_id=record.pk)
    return record, HeldDelete.objects.get(pg_row_id=record.pk)


def _sections(client: Client) -> dict[str, list[str]]:
    app_list = client.get("/admin/").context["app_list"]
    return {app["name"]: [model["name"] for model in app["models"]] for app in app_list}


def test_index_has_compliance_guardrails_and_settings_write_guardrails(operator):
    sections = _sections(operator)
    assert sections["Compliance"] == ["Guardrail rules", "Guardrails"]
    assert sections["Settings"] == ["Write guardrails"]
    assert sections["Records"] == ["Record write states", "Records", "Write trails"]


@pytest.mark.parametrize(
    "path",
    [
        "/admin/",
        "/admin/guardrails/",
        "/admin/instance_settings/",
        GUARDRAILS,
        WRITE_GUARDRAILS,
        "/admin/guardrails/guardrailrule/",
        "/admin/guardrails/guardrailrule/add/",
        "/admin/records/record/",
        "/admin/records/recordwritestate/",
        "/admin/records/writetrail/",
    ],
)
def test_admin_pages_render_for_a_superuser(alice, operator, path):
    _held(alice, "A")
    assert operator.get(path).status_code == 200


def test_held_delete_and_record_change_pages_render(alice, operator):
    record, held = _held(alice, "A")
    res = operator.get(f"{GUARDRAILS}{held.pk}/change/")
    assert res.status_code == 200
    assert operator.get(f"/admin/records/record/{record.pk}/change/").status_code == 200
    trail = WriteTrail.reads.first()
    assert operator.get(f"/admin/records/writetrail/{trail.pk}/change/").status_code == 200


def test_guardrails_list_shows_pending_first(alice, admin_user, operator):
    _, first = _held(alice, "A")
    _, second = _held(alice, "B")
    from records.verdicts import held_delete_decide

    held_delete_decide(held_id=first.pk, approve=False, by=admin_user)
    listed = [h.pk for h in operator.get(GUARDRAILS).context["cl"].result_list]
    assert listed == [second.pk, first.pk]


def test_held_deletes_cannot_be_added_or_removed_by_hand(alice, operator):
    _, held = _held(alice, "A")
    assert operator.get(f"{GUARDRAILS}add/").status_code == 403
    assert operator.get(f"{GUARDRAILS}{held.pk}/delete/").status_code == 403
    res = operator.get(GUARDRAILS)
    actions = [name for name, _ in res.context["action_form"].fields["action"].choices]
    assert actions == ["", "approve_selected", "reject_selected"]


def test_rule_form_refuses_an_unknown_record_type(operator):
    res = operator.post(
        "/admin/guardrails/guardrailrule/add/",
        {"record_type": "nope", "action": "delete", "decision": "allow"},
    )
    assert res.status_code == 200
    assert "&#x27;nope&#x27; is not a record type in the catalog" in res.content.decode()
    assert GuardrailRule.objects.count() == 0
    res = operator.post(
        "/admin/guardrails/guardrailrule/add/",
        {"record_type": "customer", "action": "delete", "decision": "allow_with_audit"},
    )
    assert res.status_code == 302
    assert GuardrailRule.objects.get().decision == "allow_with_audit"


def test_staff_without_permissions_cannot_reach_the_screens(db):
    clerk = make_user("clerk")
    clerk.is_staff = True
    clerk.save()
    client = Client()
    client.force_login(clerk)
    assert client.get(GUARDRAILS).status_code == 403
    assert client.get(WRITE_GUARDRAILS).status_code == 403


def test_records_admin_is_read_only(alice, operator):
    record, _ = _held(alice, "A")
    assert operator.get("/admin/records/record/add/").status_code == 403
    assert operator.get(f"/admin/records/record/{record.pk}/delete/").status_code == 403
    res = operator.post(f"/admin/records/record/{record.pk}/change/", {"record_type": "x"})
    assert res.status_code == 403
    record.refresh_from_db()
    assert record.record_type == "customer"
