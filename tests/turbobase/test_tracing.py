"""OpenTelemetry traces (issue 22, item 4): a span per HTTP request, per run slice and per step,
exported over OTLP/HTTP to a receiver on loopback; the run stores its trace id and the admin's
run page shows it.

The traced side is a real process (tracing is set up when a process starts with
``OTEL_EXPORTER_OTLP_ENDPOINT`` set): it sends one ``?mode=sync`` invoke through Django's request
handling, which delivers the run on the request itself, then flushes its spans and exits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.trace import SpanKind

from kernel.models import token_issue
from kernel.tracing import tracing_wanted
from processes.models import ProcessRun
from tests.processes.conftest import TWO_NOTES, process_deploy
from tests.turbobase.otlp_receiver import OTLPReceiver
from tests.workers import worker_database_url

BASE_DIR = Path(__file__).resolve().parents[2]

INVOKE = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "turbobase.settings")
import django
django.setup()
from django.test import Client
from kernel.tracing import tracing_flush
res = Client().post(
    "/v1/processes/acme:two-notes?mode=sync",
    data=json.dumps({"memo": "traced"}),
    content_type="application/json",
    HTTP_AUTHORIZATION="Bearer " + sys.argv[1],
)
tracing_flush()
print(json.dumps({"status": res.status_code, "body": res.json()}))
"""

RUN_PAGE = "/admin/processes/processrun/{}/change/"


def test_tracing_is_off_unless_an_endpoint_is_set(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert tracing_wanted() is False
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    assert tracing_wanted() is True


@pytest.mark.django_db(transaction=True)
def test_a_sync_invoke_is_one_trace_request_slice_and_steps(admin_user, operator):
    process_deploy(TWO_NOTES, by=admin_user, name="two-notes.ts")
    _, raw = token_issue(user=admin_user, scopes=["extensions:deploy", "data:read"])
    with OTLPReceiver() as receiver:
        env = {
            **os.environ,
            "DATABASE_URL": worker_database_url(),
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_SERVICE_NAME": "turbobase-test-web",
        }
        done = subprocess.run(
            [sys.executable, "-c", INVOKE, raw],
            cwd=BASE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        spans = list(receiver.spans)
    assert answer["status"] == 200 and answer["body"]["state"] == "committed", answer
    run = ProcessRun.objects.get(pk=answer["body"]["runId"])

    (http,) = [s for s in spans if s.kind == SpanKind.SERVER.value + 1]  # OTLP counts from 1
    assert "v1/processes/<str:process_id>" in http.name, http.name
    assert http.service == "turbobase-test-web"
    (slice_span,) = [s for s in spans if s.name == "run slice"]
    steps = sorted((s for s in spans if s.name.startswith("step ")), key=lambda s: s.name)
    assert run.trace_id == http.trace_id == slice_span.trace_id
    assert slice_span.parent_span_id == http.span_id
    assert slice_span.attributes["turbobase.process_id"] == "acme:two-notes"
    assert slice_span.attributes["turbobase.run.state"] == "committed"
    assert [s.attributes["turbobase.step_id"] for s in steps] == ["first", "second"]
    assert {s.parent_span_id for s in steps} == {slice_span.span_id}
    assert {s.attributes["turbobase.step.outcome"] for s in steps} == {"confirmed"}

    page = operator.get(RUN_PAGE.format(run.pk))
    assert page.status_code == 200
    assert run.trace_id in page.content.decode()


@pytest.mark.django_db
def test_with_tracing_off_a_run_stores_no_trace_id(alice, admin_user):
    from processes.engine.runner import run_deliver
    from processes.invoke import run_invoke

    process_deploy(TWO_NOTES, by=admin_user, name="two-notes.ts")
    run = run_invoke(process_id="acme:two-notes", body={"memo": "m"}, user=alice)
    run_deliver(str(run.pk))
    run.refresh_from_db()
    assert (run.state, run.trace_id) == ("committed", "")
