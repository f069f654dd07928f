"""An operator plans a run from the process's page: types the input, reads the table, and
nothing was written."""

from __future__ import annotations

import pytest

from processes.models import ProcessRun
from records.models import Record
from tests.processes.engine_support import deploy
from tests.processes.test_plan import ONBOARD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_plan_a_run_from_the_process_page(browser_page, admin_user):
    deploy(ONBOARD, by=admin_user)
    web = browser_page
    web.sign_in("root", "pw-root")
    web.goto("/admin/processes/process/acme:onboard/change/")
    page = web.page
    page.click("#plan-link")
    page.wait_for_selector("#id_input")
    page.fill("#id_input", '{"name": "Acme"}')
    page.click("#plan-submit")
    page.wait_for_selector("#plan-steps")
    rows = page.locator("#plan-steps tbody tr")
    assert rows.count() == 4
    assert [rows.nth(i).locator("td").nth(3).inner_text() for i in range(4)] == [
        "create",
        "create",
        "update",
        "skip",
    ]
    web.shot("process-plan", full_page=True)
    assert (ProcessRun.objects.count(), Record.reads.count()) == (0, 0)
