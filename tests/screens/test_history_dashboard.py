"""The admin's dashboard tells an operator when the run history was last purged, and by whom."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from processes.history.purge import history_purge
from processes.models import ProcessRun, RunState

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_dashboard_shows_the_last_purge(browser_page, admin_user):
    web = browser_page
    web.sign_in("root", "pw-root")
    assert web.page.locator("#last-purge").inner_text() == "Run history: never purged yet"
    long_ago = timezone.now() - timedelta(days=400)
    ProcessRun.objects.create(
        process_id="acme:old",
        state=RunState.COMMITTED,
        module_version=1,
        invoked_by=admin_user,
        finished_at=long_ago,
    )
    history_purge(by=admin_user)
    web.goto("/admin/")
    text = web.page.locator("#last-purge").inner_text()
    assert text.startswith("Run history: last purged ") and text.endswith("— 1 run, by root")
    web.shot("dashboard-last-purge")
    web.page.click("#last-purge a")
    web.page.wait_for_url("**/admin/kernel/auditevent/*/change/")
    assert "history.purged" in web.page.content()
