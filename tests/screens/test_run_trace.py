"""An operator reads a run's OpenTelemetry trace id on its page, to look the run up in the
tracing backend."""

from __future__ import annotations

import pytest

from processes.invoke import run_invoke
from processes.models import ProcessRun
from tests.processes.engine_support import deploy
from tests.processes.test_plan import ONBOARD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def test_the_run_page_shows_its_trace_id(browser_page, admin_user):
    deploy(ONBOARD, by=admin_user)
    run = run_invoke(process_id="acme:onboard", body={"name": "A"}, user=admin_user)
    ProcessRun.objects.filter(pk=run.pk).update(trace_id=TRACE)  # as a traced request stores it
    web = browser_page
    web.sign_in("root", "pw-root")
    web.goto(f"/admin/processes/processrun/{run.pk}/change/")
    field = web.page.locator(".field-trace_id")
    assert TRACE in field.inner_text()
    web.shot("run-trace-id")
