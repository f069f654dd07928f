"""``GET /metrics``: who may read it, and what it counts (issue 22, item 3).

Counters are summed over every process that ever wrote into the multiprocess folder, so each test
reads a difference: the scrape before, what the test did, the scrape after. (The folder is the
checkout's ``var/prometheus``: two test sessions at once in one checkout count into each other's.)
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import TestCase
from django.utils import timezone
from rest_framework.test import APIClient

from guardrails.models import HeldDelete
from kernel.models import token_issue
from processes.dry_run import run_plan
from processes.engine.claim import run_claim
from processes.engine.redelivery import redelivery_tick
from processes.engine.runner import run_deliver
from processes.invoke import run_invoke
from processes.models import ProcessRun
from records.models import RecordWriteState
from tests.conftest import client_for, make_user
from tests.processes.conftest import FAILS_AT_SECOND, TWO_NOTES, drain_runs, process_deploy
from tests.turbobase.metrics_support import metrics_client, scrape, value

pytestmark = pytest.mark.django_db


def test_without_credentials_the_answer_is_401_in_json(db):
    res = APIClient().get("/metrics")
    assert res.status_code == 401
    assert res["Content-Type"] == "application/json"
    assert res.json()["error"] == "not_authenticated"


def test_a_token_without_metrics_read_is_refused_403_naming_the_scope(alice):
    _, raw = token_issue(user=alice, scopes=["data:read"], name="reader")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    res = client.get("/metrics", HTTP_ACCEPT="text/plain;version=0.0.4")
    assert res.status_code == 403
    assert res.json()["error"] == "insufficient_scope"
    assert res.json()["scope"] == "metrics:read"


def test_a_session_must_be_an_administrators(alice, admin_user):
    assert client_for(alice).get("/metrics").status_code == 403
    assert client_for(admin_user).get("/metrics").status_code == 200


def test_a_token_with_metrics_read_reads_the_prometheus_text(alice):
    assert APIClient().get("/v1/health/live").status_code == 200  # one request counted at least
    res = metrics_client(alice).get("/metrics", HTTP_ACCEPT="text/plain;version=0.0.4")
    assert res.status_code == 200
    text = res.content.decode()
    names = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")}
    assert names and all(name.startswith("turbobase_") for name in names), names
    for expected in (
        "turbobase_queue_depth",
        "turbobase_queue_oldest_age_seconds",
        "turbobase_held_deletes_pending",
        "turbobase_outbound_backlog",
        "turbobase_http_requests_total",
    ):
        assert expected in names


def test_the_allowed_addresses_read_without_credentials(db, settings):
    settings.TURBOBASE_METRICS_ALLOW = ["10.0.0.0/8"]
    assert APIClient().get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert APIClient().get("/metrics", REMOTE_ADDR="192.168.1.1").status_code == 401
    settings.TURBOBASE_METRICS_ALLOW = ["127.0.0.1"]
    assert APIClient().get("/metrics").status_code == 200  # the test client's own address


def test_runs_started_and_finished_by_process_and_outcome_and_steps_by_kind(alice, admin_user):
    process_deploy(TWO_NOTES, by=admin_user, name="two-notes.ts")
    process_deploy(FAILS_AT_SECOND, by=admin_user, name="fails.ts")
    scraper = metrics_client(alice)
    before = scrape(scraper)
    # Runs are counted when their rows commit: here, when the test's callbacks run.
    with TestCase.captureOnCommitCallbacks(execute=True):
        run_invoke(process_id="acme:two-notes", body={"memo": "m"}, user=alice)
        run_invoke(process_id="acme:two-notes", body={"memo": "n"}, user=alice)
        run_invoke(process_id="acme:fails-at-second", body={}, user=alice)
        run_plan(process_id="acme:two-notes", body={"memo": "p"}, user=alice)  # never counted
        drain_runs()
    after = scrape(scraper)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("turbobase_runs_started_total", process="acme:two-notes") == 2
    assert delta("turbobase_runs_started_total", process="acme:fails-at-second") == 1
    assert (
        delta("turbobase_runs_finished_total", process="acme:two-notes", outcome="committed") == 2
    )
    assert (
        delta("turbobase_runs_finished_total", process="acme:fails-at-second", outcome="failed")
        == 1
    )
    # Five steps, all of kind create: two runs of two steps, and the failing run's two.
    assert delta("turbobase_step_duration_seconds_count", kind="create") == 6
    assert delta("turbobase_step_duration_seconds_sum", kind="create") > 0
    # The refused step's write is a refusal by the rule (code) that refused it.
    refused = [
        key
        for key in after
        if key[0] == "turbobase_guardrail_decisions_total"
        and dict(key[1])["decision"] == "refused"
        and value(after, key[0], **dict(key[1])) - value(before, key[0], **dict(key[1])) == 1
    ]
    assert len(refused) == 1, refused
    # Every build ran in the sandbox: its calls are timed.
    assert delta("turbobase_sandbox_call_duration_seconds_count", outcome="ok") >= 6


def test_the_queue_the_held_deletes_and_the_outbound_backlog_are_read_when_scraped(
    alice, admin_user
):
    process_deploy(TWO_NOTES, by=admin_user, name="two-notes.ts")
    scraper = metrics_client(alice)
    empty = scrape(scraper)
    assert value(empty, "turbobase_queue_depth", pending_reason="queued") == 0
    assert value(empty, "turbobase_queue_oldest_age_seconds") == 0
    assert value(empty, "turbobase_held_deletes_pending") == 0

    queued = [
        run_invoke(process_id="acme:two-notes", body={"memo": str(n)}, user=alice) for n in range(3)
    ]
    ProcessRun.objects.filter(pk=queued[0].pk).update(
        enqueued_at=queued[0].created_at.replace(year=queued[0].created_at.year - 1)
    )
    HeldDelete.objects.create(
        record_type="salesOrder",
        pg_row_id="00000000-0000-0000-0000-000000000001",
        source_system="netsuite",
    )
    read = scrape(scraper)
    assert value(read, "turbobase_queue_depth", pending_reason="queued") == 3
    assert value(read, "turbobase_queue_oldest_age_seconds") > 300 * 86400  # a year, roughly
    assert value(read, "turbobase_held_deletes_pending") == 1
    assert value(read, "turbobase_held_deletes_oldest_age_seconds") >= 0

    # Delivered, but the source has not been sent the writes yet: the outbound backlog.
    for run in queued:  # the engine alone: drain_runs would send the writes too
        run_deliver(str(run.pk))
    pending = RecordWriteState.objects.filter(status="pending")
    sources = set(pending.values_list("source_system", flat=True))
    assert pending.count() == 6 and len(sources) == 1
    (source,) = sources
    done = scrape(scraper)
    assert value(done, "turbobase_queue_depth", pending_reason="queued") == 0
    assert value(done, "turbobase_outbound_backlog", source=source) == 6
    assert value(done, "turbobase_outbound_oldest_age_seconds", source=source) >= 0


def test_http_requests_are_counted_by_route_pattern_and_status(alice):
    scraper = metrics_client(alice)
    before = scrape(scraper)
    client = client_for(alice)
    for name in ("a", "b"):  # two process ids, one route
        assert client.get(f"/v1/processes/acme:{name}/runs").status_code == 200
    after = scrape(scraper)
    route = {"route": "v1/processes/<str:process_id>/runs", "method": "GET", "status": "200"}
    key = "turbobase_http_requests_total"
    assert value(after, key, **route) - value(before, key, **route) == 2


def test_a_request_answers_its_request_id_and_keeps_a_sane_one_given(db):
    client = APIClient()
    mine = client.get("/v1/health", HTTP_X_REQUEST_ID="abc-123")
    assert mine["X-Request-ID"] == "abc-123"
    made = client.get("/v1/health", HTTP_X_REQUEST_ID="no spaces allowed")
    assert made["X-Request-ID"] != "no spaces allowed" and len(made["X-Request-ID"]) == 32


def test_metrics_read_is_a_scope_tokens_can_be_issued_with(db):
    user = make_user("scraper")
    token, _ = token_issue(user=user, scopes=["metrics:read"])
    assert token.scopes == ["metrics:read"]


def test_a_lease_takeover_is_counted_and_a_lost_queued_delivery_is_not(alice, admin_user, settings):
    settings.PROCESS_RUN_LEASE_S = 5
    process_deploy(TWO_NOTES, by=admin_user, name="two-notes.ts")
    scraper = metrics_client(alice)
    before = scrape(scraper)
    lost = run_invoke(process_id="acme:two-notes", body={"memo": "lost"}, user=alice)
    held = run_invoke(process_id="acme:two-notes", body={"memo": "held"}, user=alice)
    assert run_claim(str(held.pk), held.delivery) is not None  # a worker took it …
    now = timezone.now()  # … and died: its lease ran out 2 s ago; the other was never claimed
    ProcessRun.objects.filter(pk=held.pk).update(
        enqueued_at=now - timedelta(seconds=8), lease_until=now - timedelta(seconds=2)
    )
    ProcessRun.objects.filter(pk=lost.pk).update(enqueued_at=now - timedelta(seconds=6))
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert redelivery_tick(mode="async") == 2
    after = scrape(scraper)
    key = "turbobase_lease_takeovers_total"
    assert value(after, key, lane="async") - value(before, key, lane="async") == 1
