"""Operator journeys in headless Chromium, Compliance and Settings: approve and reject a held
delete with a reason; edit a setting, and have a bad value refused by its field."""

from __future__ import annotations

import pytest

from guardrails.models import HeldDelete, InstanceSetting
from guardrails.settings import setting_get
from records.boundary import record_create, record_delete
from records.models import Record
from records.trail import Actor

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GUARDRAILS = "/admin/guardrails/guardrail/"
SETTINGS = "/admin/instance_settings/writeguardrail/"


def _held(user, name: str) -> tuple[Record, HeldDelete]:
    """A customer whose delete the default guardrail holds for an operator's decision."""
    record = record_create(
        actor=Actor(user=user), record_type="customer", parent={"company_name": name}
    ).record
    record_delete(actor=Actor(user=user), record_type="customer", pg_row_id=record.pk)
    return record, HeldDelete.objects.get(pg_row_id=record.pk)


@pytest.mark.parametrize(
    ("verdict", "reason", "status"),
    [("approve", "duplicate of C-102", "approved"), ("reject", "still a customer", "rejected")],
)
def test_decide_a_held_delete_with_a_reason(
    browser_page, admin_user, alice, verdict, reason, status
):
    _, held = _held(alice, "Acme Ltd")
    web = browser_page
    web.sign_in("root", "pw-root")
    web.goto(GUARDRAILS)
    page = web.page
    page.click(f'a[href="{GUARDRAILS}{held.pk}/decide/{verdict}/"]')
    page.wait_for_selector('input[name="_decide"]')
    web.shot(f"held-delete-{verdict}-confirm")
    page.fill('textarea[name="reason"], input[name="reason"]', reason)
    page.click('input[name="_decide"]')
    page.wait_for_selector("ul.messagelist")
    assert f"held delete #{held.pk} {status}" in page.inner_text("ul.messagelist").lower()
    held.refresh_from_db()
    assert (held.status, held.note) == (status, reason)
    web.shot(f"held-delete-{status}")


def test_a_held_delete_without_a_reason_is_refused_by_its_field(browser_page, admin_user, alice):
    _, held = _held(alice, "Acme Ltd")
    web = browser_page
    web.sign_in("root", "pw-root")
    web.goto(f"{GUARDRAILS}{held.pk}/decide/approve/")
    web.page.click('input[name="_decide"]')
    web.page.wait_for_selector(".errorlist")
    held.refresh_from_db()
    assert held.status == "pending"


def test_edit_a_setting_and_have_a_bad_value_refused_by_its_field(browser_page, admin_user):
    web = browser_page
    web.sign_in("root", "pw-root")
    web.goto(SETTINGS)
    page = web.page
    field = "#id_guardrails__max_deletes_per_min"
    page.fill(field, "25")
    page.click('input[name="_save"]')
    page.wait_for_selector("ul.messagelist")
    assert "1 setting(s) changed: guardrails.max_deletes_per_min" in page.inner_text(
        "ul.messagelist"
    )
    assert setting_get("guardrails.max_deletes_per_min") == 25
    web.shot("settings-saved")
    page.fill(field, "5e")
    page.click('input[name="_save"]')
    page.wait_for_selector(".errorlist")
    assert "guardrails.max_deletes_per_min must be a whole number, not '5e'" in page.inner_text(
        ".errorlist"
    )
    web.shot("settings-bad-value")
    assert dict(InstanceSetting.objects.values_list("key", "value")) == {
        "guardrails.max_deletes_per_min": 25
    }
