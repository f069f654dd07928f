"""An operator finds the runs of one customer from the admin's run list, by a searchable input
field typed into its search box, and opens one."""

from __future__ import annotations

import pytest

from processes.invoke import run_invoke
from tests.processes.engine_support import deploy
from tests.processes.test_run_search import ORDERS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RUNS = "/admin/processes/processrun/"


def test_find_a_customers_runs_by_its_input_field(browser_page, admin_user, alice):
    deploy(ORDERS, by=admin_user, name="processes/orders.ts")
    wanted = [
        run_invoke(process_id="acme:orders", body={"customer": "C-1", "amount": n}, user=alice)
        for n in (1, 2)
    ]
    other = run_invoke(process_id="acme:orders", body={"customer": "C-2"}, user=alice)
    web = browser_page
    web.sign_in("root", "pw-root")
    web.goto(RUNS)
    page = web.page
    assert "input.FIELD=VALUE" in page.locator("#changelist-search").inner_text()
    page.fill("#searchbar", "input.customer=C-1")
    page.press("#searchbar", "Enter")
    page.wait_for_url("**q=input.customer*")
    listed = page.locator("#result_list tbody tr th a").all_inner_texts()
    assert sorted(listed) == sorted(str(run.pk) for run in wanted)
    assert str(other.pk) not in page.content()
    web.shot("runs-found-by-input")
    page.click(f"text={wanted[0].pk}")
    page.wait_for_url(f"**/{wanted[0].pk}/change/**")
    assert "C-1" in page.locator("body").inner_text()
