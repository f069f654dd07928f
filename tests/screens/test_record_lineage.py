"""An operator follows a run to a record it wrote, reads the record's lineage, and follows the
lineage back to the run."""

from __future__ import annotations

import pytest

from processes.invoke import run_invoke
from records.models import Record
from tests.processes.engine_support import deploy, pump
from tests.records.test_lineage import CREATE_THEN_STAMP

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_from_a_run_to_its_record_and_back(browser_page, admin_user, alice):
    deploy(CREATE_THEN_STAMP, by=admin_user)
    run = run_invoke(process_id="acme:onboard", body={"name": "Acme"}, user=alice)
    pump()
    record = Record.reads.get(record_type="customer")
    web = browser_page
    web.sign_in("root", "pw-root")
    web.goto(f"/admin/processes/processrun/{run.pk}/change/")
    page = web.page
    page.locator(f'a[href="/admin/records/record/{record.pk}/change/"]').first.click()
    page.wait_for_selector("#record-lineage")
    rows = page.locator("#record-lineage tbody tr")
    assert rows.count() == 2
    assert "create allowed" in rows.nth(0).inner_text()
    assert "update allowed" in rows.nth(1).inner_text()
    assert "confirmed" in rows.nth(0).inner_text()
    web.shot("record-lineage", full_page=True)
    page.locator("#record-lineage a.lineage-run").first.click()
    page.wait_for_url(f"**/processrun/{run.pk}/change/")
    assert page.locator("#run-state").inner_text() == "committed"
