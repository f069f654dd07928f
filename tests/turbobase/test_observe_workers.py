"""Logs, traces and metrics from a real django-q2 worker cluster (issue 22, items 3 and 4).

One cluster, started with ``TURBOBASE_LOG_FORMAT=json``, ``LOG_LEVEL=INFO`` and an OTLP endpoint
on a loopback receiver, delivers one run. Then: the worker's log is JSON lines, its delivery's
start and end lines carry the run and the process (the end line the state), a step's line its step
id; the receiver holds the run's slice span and one span per step, in the trace the run stored;
and this process's scrape of ``/metrics`` counts what the worker process did (multiprocess mode).
"""

from __future__ import annotations

import json

import pytest

from processes.invoke import run_invoke
from processes.models import ProcessRun
from tests.processes.conftest import process_deploy
from tests.turbobase.metrics_support import metrics_client, scrape, value
from tests.turbobase.otlp_receiver import OTLPReceiver
from tests.workers import QCluster, wait_until

pytestmark = [pytest.mark.workers, pytest.mark.django_db(transaction=True)]

LOGGED = """\
import { defineProcess } from '@turbobase/extensions';

export default defineProcess({
  id: 'obs:logged',
  input: { type: 'object' },
  steps: [
    { id: 'first', recordType: 'salesOrder',
      build: (ctx) => { ctx.log('building the first'); return { parent: { memo: 'a' } }; } },
    { id: 'second', recordType: 'salesOrder', build: (ctx) => ({ parent: { memo: 'b' } }) },
  ],
});
"""


def _json_lines(text: str) -> list[dict]:
    """Every line of the log, each one JSON object (a line that is not fails the test)."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_workers_delivery_is_logged_traced_and_counted(admin_user, alice, tmp_path):
    process_deploy(LOGGED, by=admin_user, name="logged.ts")
    scraper = metrics_client(alice)
    before = scrape(scraper)
    log_path = tmp_path / "q.log"
    with OTLPReceiver() as receiver:
        env = {
            "TURBOBASE_LOG_FORMAT": "json",
            "LOG_LEVEL": "INFO",
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_SERVICE_NAME": "turbobase-test-workers",
        }
        with QCluster(workers=1, log_path=log_path, extra_env=env):
            run = run_invoke(process_id="obs:logged", body={}, user=alice)
            wait_until(
                lambda: ProcessRun.objects.get(pk=run.pk).state == "committed",
                timeout=60,
                message="the run committed",
            )
            wait_until(
                lambda: len(receiver.named("step ")) >= 2 and receiver.named("run slice"),
                timeout=30,
                message="the slice's and the steps' spans exported",
            )
            after = scrape(scraper)
        spans = list(receiver.spans)
    run.refresh_from_db()

    # Traces: the slice span and a span per step, in the trace the run stored.
    (slice_span,) = [s for s in spans if s.name == "run slice"]
    assert slice_span.attributes["turbobase.run_id"] == str(run.pk)
    assert slice_span.attributes["turbobase.process_id"] == "obs:logged"
    assert slice_span.attributes["turbobase.run.state"] == "committed"
    assert slice_span.service == "turbobase-test-workers"
    assert run.trace_id == slice_span.trace_id and len(run.trace_id) == 32
    steps = sorted((s for s in spans if s.name.startswith("step ")), key=lambda s: s.name)
    assert [s.attributes["turbobase.step_id"] for s in steps] == ["first", "second"]
    for step in steps:
        assert (step.trace_id, step.parent_span_id) == (slice_span.trace_id, slice_span.span_id)
        assert step.attributes["turbobase.step.kind"] == "create"
        assert step.attributes["turbobase.step.outcome"] == "confirmed"
        assert step.attributes["turbobase.process_id"] == "obs:logged"
    assert set(receiver.paths) == {"/v1/traces"}

    # Logs: JSON lines; the delivery's two INFO lines; the step's own line names the step.
    text = log_path.read_text()
    lines = _json_lines(text)
    assert lines, text
    about_run = [line for line in lines if line.get("run_id") == str(run.pk)]
    started = [line for line in about_run if line["message"].endswith("started")]
    ended = [line for line in about_run if "ended" in line["message"]]
    assert len(started) == 1 and len(ended) == 1, about_run
    assert started[0]["process_id"] == ended[0]["process_id"] == "obs:logged"
    assert started[0]["level"] == ended[0]["level"] == "INFO"
    assert ended[0]["state"] == "committed"
    (step_line,) = [line for line in about_run if line["message"] == "building the first"]
    assert (step_line["step_id"], step_line["process_id"]) == ("first", "obs:logged")

    # Metrics: counted in the worker's process, summed by this process's scrape.
    finished = {"process": "obs:logged", "outcome": "committed"}
    assert (
        value(after, "turbobase_runs_finished_total", **finished)
        - value(before, "turbobase_runs_finished_total", **finished)
        == 1
    )
    steps_counted = value(after, "turbobase_step_duration_seconds_count", kind="create") - value(
        before, "turbobase_step_duration_seconds_count", kind="create"
    )
    assert steps_counted == 2
