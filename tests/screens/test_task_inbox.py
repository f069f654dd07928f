"""The Inbox in headless Chromium: from the dashboard's open-tasks tile, a bad JSON output refused
by its field, then one task completed with an output and another rejected with a reason."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from processes.human_tasks.models import HumanTask
from processes.models import ProcessRun
from records.models import Record
from tests.processes.engine_support import deploy, invoke, ledger, pump
from tests.processes.task_support import approval

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_complete_and_reject_tasks_from_the_inbox(browser_page, admin_user, alice):
    admin_user.groups.add(Group.objects.create(name="finance"))
    deploy(approval(assignee="group:finance"), by=admin_user)
    first = invoke("t:approve-order", {"memo": "PO-1"}, alice)
    second = invoke("t:approve-order", {"memo": "PO-2"}, alice)
    pump()
    tasks = {t.run_id: t for t in HumanTask.objects.all()}
    one, two = tasks[first.pk], tasks[second.pk]

    web = browser_page
    web.sign_in("root", "pw-root")
    page = web.page
    tile = page.locator("#dashboard a", has_text="Open tasks")
    assert (
        page.locator("#dashboard tr", has_text="Open tasks")
        .locator(".dashboard-count")
        .inner_text()
        == "2"
    )
    web.shot("task-dashboard-tile")
    tile.click()
    page.wait_for_selector(f"#task-{one.pk}")
    assert page.locator(".task h3").all_inner_texts() == ["Approve PO-1", "Approve PO-2"]

    card = page.locator(f"#task-{one.pk}")
    card.locator("textarea.task-output").fill("{note: 'unquoted'}")
    card.locator('input[name="_complete"]').click()
    page.wait_for_selector(f"#task-{one.pk} .errorlist")
    assert "not JSON" in page.locator(f"#task-{one.pk} .errorlist").inner_text()
    one.refresh_from_db()
    assert one.state == "open"
    web.shot("task-inbox-bad-json")

    card = page.locator(f"#task-{one.pk}")
    card.locator("textarea.task-output").fill('{"note": "approved by root"}')
    card.locator('input[name="_complete"]').click()
    page.wait_for_selector("ul.messagelist")
    assert (
        "“Approve PO-1” completed; its run goes on" in page.locator("ul.messagelist").inner_text()
    )
    assert page.locator(".task h3").all_inner_texts() == ["Approve PO-2"]

    card = page.locator(f"#task-{two.pk}")
    card.locator("textarea.task-reason").fill("no budget this quarter")
    web.shot("task-inbox-reject")
    card.locator('input[name="_reject"]').click()
    page.wait_for_selector("#inbox-empty")
    assert "“Approve PO-2” rejected" in page.locator("ul.messagelist").inner_text()
    web.shot("task-inbox-empty")

    pump()
    first.refresh_from_db(), second.refresh_from_db()
    assert (first.state, second.state) == ("committed", "failed")
    assert Record.reads.get(record_type="salesOrder").fields["memo"] == "PO-1: approved by root"
    assert ledger(second)[0] == ("approve", "failed", "TASK_REJECTED")
    assert ProcessRun.objects.get(pk=second.pk).reason.endswith(
        "rejected by root: no budget this quarter"
    )
