"""Operator journeys in headless Chromium: sign in, switch a process (and every process) off and
on with a reason, open a 2,000-step run page, cancel a waiting run from its page."""

from __future__ import annotations

import pytest

from guardrails.settings import setting_get
from processes.invoke import run_invoke
from processes.models import PendingReason, Process, ProcessRun, RunState
from processes.timeline import MAX_BARS
from tests.processes.ledger_support import run_with_ledger

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PROCESSES = "/admin/processes/process/"
RUNS = "/admin/processes/processrun/"


def _message(page) -> str:
    return page.locator("ul.messagelist").inner_text()


def test_sign_in_and_switch_a_process_off_and_on_with_a_reason(browser_page, admin_user, two_notes):
    web = browser_page
    web.sign_in("root", "pw-root")
    web.goto(PROCESSES)
    page = web.page
    page.check(f'input[name="_selected_action"][value="{two_notes}"]')
    page.select_option('select[name="action"]', "switch_off")
    page.click('button[name="index"]')
    page.wait_for_selector("#switch-confirm")
    web.shot("process-switch-off-confirm")
    page.fill("#id_reason", "vendor master is being cleaned")
    page.click("#switch-confirm")
    page.wait_for_selector("ul.messagelist")
    assert "1 process(es) switched off: vendor master is being cleaned" in _message(page)
    process = Process.objects.get(pk=two_notes)
    assert (process.is_enabled, process.disabled_reason) == (
        False,
        "vendor master is being cleaned",
    )
    web.shot("processes-one-off")
    # The whole list fits at 1280 px: its table does not scroll sideways inside its box.
    assert page.evaluate(
        "(() => { const box = document.querySelector('.results');"
        " return box.scrollWidth <= box.clientWidth; })()"
    )
    page.check(f'input[name="_selected_action"][value="{two_notes}"]')
    page.select_option('select[name="action"]', "switch_on")
    page.click('button[name="index"]')
    page.wait_for_selector("ul.messagelist")
    assert "1 process(es) switched on" in _message(page)
    process.refresh_from_db()
    assert (process.is_enabled, process.disabled_reason) == (True, "")


def test_switch_every_process_off_with_a_reason_and_back_on(browser_page, admin_user, two_notes):
    web = browser_page
    web.sign_in("root", "pw-root")
    web.goto(PROCESSES)
    page = web.page
    page.click("#instance-switch-off")
    page.wait_for_selector("#switch-confirm")
    assert "Every process on this instance is switched off" in page.inner_text("#switch-explains")
    web.shot("instance-switch-off-confirm")
    page.fill("#id_reason", "ERP upgrade tonight")
    page.click("#switch-confirm")
    page.wait_for_selector("#instance-switch-on")
    assert "Every process on the instance is switched off (ERP upgrade tonight)" in _message(page)
    assert setting_get("processes.enabled") == 0
    web.shot("processes-all-off")
    page.click("#instance-switch-on")
    page.click("#switch-confirm")
    page.wait_for_selector("#instance-switch-off")
    assert setting_get("processes.enabled") == 1


def test_a_2000_step_run_page_draws_its_timeline_and_pages_its_ledger(browser_page, admin_user):
    run = run_with_ledger("acme:big", 2000)
    web = browser_page
    web.sign_in("root", "pw-root")
    response = web.goto(f"{RUNS}{run.run_id}/change/")
    assert response.status == 200
    assert len(response.body()) < 400 * 1024
    page = web.page
    assert page.locator("#timeline .bar").count() == MAX_BARS
    assert page.locator("#ledger tbody tr").count() == 100
    assert page.inner_text("#run-state") == "committed"
    # The page is usable at 1280 px: nothing wider than the window.
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    web.shot("run-2000-steps")
    web.shot("run-2000-steps-full", full_page=True)
    page.click('#ledger .ledger-pages a:text-is("2")')
    page.wait_for_selector("#ledger h2:has-text('steps 101–200 of 2000')")
    assert page.locator("#ledger tbody tr").first.inner_text().startswith("101")


def test_cancel_a_waiting_run_from_its_page(browser_page, admin_user, alice, two_notes):
    run = run_invoke(process_id=two_notes, body={"memo": "m"}, user=alice)
    ProcessRun.objects.filter(pk=run.pk).update(
        state=RunState.RUNNING, pending_reason=PendingReason.AWAITING_TIME, waiting_step="second"
    )
    web = browser_page
    web.sign_in("root", "pw-root")
    web.goto(f"{RUNS}{run.run_id}/change/")
    page = web.page
    assert page.locator("#timeline-waits .bar").count() == 1
    web.shot("run-waiting")
    page.click("#steer-cancel")
    page.wait_for_selector("#steer-confirm")
    assert "A queued run never executes; a parked run ends now" in page.inner_text(
        "#steer-explains"
    )
    web.shot("run-cancel-confirm")
    run.refresh_from_db()
    assert run.state == RunState.RUNNING
    page.click("#steer-confirm")
    page.wait_for_selector("ul.messagelist")
    assert "Run cancelled: cancelled by root" in _message(page)
    assert page.inner_text("#run-state") == "cancelled"
    run.refresh_from_db()
    assert (run.state, run.reason) == (RunState.CANCELLED, "cancelled by root")
    web.shot("run-cancelled")
