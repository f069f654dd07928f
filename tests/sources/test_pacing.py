"""Pacing per connected source, against a real HTTP source on 127.0.0.1 that the test scripts:
a 429 with Retry-After backs the whole source off without failing the run or reordering its
writes; ``sources.<name>.max_per_second`` spaces the writes; ``GET /v1/sources`` shows it all."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connections
from django_q.models import Schedule

from guardrails.settings import setting_set
from records.boundary import record_create
from records.door import door_open
from records.models import RecordWriteState
from sources.adapters.http import retry_after_seconds
from sources.models import SourceInFlight, SourcePace
from sources.outbound import outbound_drain
from tests.processes.engine_support import deploy, invoke, pump

pytestmark = pytest.mark.django_db

TWO_ORDERS = """\
import { defineProcess } from '@turbobase/extensions';

export default defineProcess({
  id: 'acme:two-orders',
  input: { type: 'object' },
  steps: [
    { id: 'first', recordType: 'salesOrder', awaitSource: true, build: (ctx) => ({ parent: { memo: 'one' } }) },
    { id: 'second', recordType: 'salesOrder', awaitSource: true, build: (ctx) => ({ parent: { memo: 'two' } }) },
  ],
});
"""


@dataclass
class PacedErp:
    """Answers ``scripted`` statuses (with their headers) first, then 201 with a minted id.

    Every request is kept with the time it arrived; ``created`` counts 2xx answers per
    idempotency key, which is how "each write exactly once" is checked.
    """

    scripted: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    received: list[tuple[float, str, int]] = field(default_factory=list)  # (time, key, status)
    created: Counter = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)
    delay: float = 0.0  # how long each answer takes
    active: int = 0
    most_active: int = 0  # the most requests it was handling at once

    def answer(self, key: str) -> tuple[int, dict[str, str], dict]:
        with self.lock:
            self.active += 1
            self.most_active = max(self.most_active, self.active)
            status, headers = self.scripted.pop(0) if self.scripted else (201, {})
            self.received.append((time.time(), key, status))
            if status < 300:
                self.created[key] += 1
            answer = {"externalId": f"SO-{len(self.received)}"}
        time.sleep(self.delay)
        with self.lock:
            self.active -= 1
        return status, headers, answer

    def sent_keys(self, status: int | None = None) -> list[str]:
        return [key for _, key, got in self.received if status is None or got == status]


def _handler(erp: PacedErp) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, headers, body = erp.answer(self.headers.get("Idempotency-Key", ""))
            payload = json.dumps(body).encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def erp(use_catalog, settings) -> Iterator[PacedErp]:
    """The shipped catalog, its ``netsuite`` source reached over HTTP at the test's server."""
    fake = PacedErp()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    catalog = json.loads(Path(django_settings.BASE_DIR, "records", "catalog.json").read_text())
    url = f"http://127.0.0.1:{server.server_address[1]}"
    use_catalog(sources={"netsuite": {"adapter": "http", "url": url}}, types=catalog["types"])
    # A wait longer than this is not slept in the drain: the test sees the backed-off state.
    settings.SOURCES_INLINE_RETRY_SECONDS = 0.3
    yield fake
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def _order(actor, memo: str) -> RecordWriteState:
    record = record_create(actor=actor, record_type="salesOrder", parent={"memo": memo}).record
    return RecordWriteState.reads.get(record=record)


def _sources(api) -> dict[str, dict]:
    res = api.get("/v1/sources")
    assert res.status_code == 200, res.content
    return {row["name"]: row for row in res.json()["sources"]}


def test_a_429_with_retry_after_backs_the_source_off_keeps_order_and_sends_each_write_once(
    erp, admin_user, alice, alice_actor, alice_api, admin_api
):
    erp.scripted.append((429, {"Retry-After": "1"}))
    deploy(TWO_ORDERS, by=admin_user)
    run = invoke("acme:two-orders", {}, alice)
    pump(sources=False)  # the first step writes and parks on the source's verdict
    first = RecordWriteState.reads.get()

    report = outbound_drain(record_type="salesOrder")

    assert [status for *_, status in erp.received] == [429]
    assert report.retry_at is not None  # backed off for the source's second, not failed
    later = [_order(alice_actor, "three"), _order(alice_actor, "four")]
    customer = record_create(
        actor=alice_actor, record_type="customer", parent={"company_name": "Acme"}
    ).record
    outbound_drain(record_type="salesOrder")  # nothing overtakes the backed-off write
    outbound_drain(record_type="customer")  # nor does another type of the same source
    assert len(erp.received) == 1
    # Neither lane holds a worker meanwhile: each is scheduled for when the backoff ends.
    backoff_ends = SourcePace.objects.get(source="netsuite").paced_until
    assert {
        name: Schedule.objects.get(name=name).next_run
        for name in ("system.sources.retry.salesOrder", "system.sources.retry.customer")
    } == {
        "system.sources.retry.salesOrder": backoff_ends,
        "system.sources.retry.customer": backoff_ends,
    }

    body = alice_api.get(f"/v1/processes/runs/{run.run_id}").json()["run"]
    assert (body["state"], body["pendingReason"]) == ("running", "awaitingSource")
    assert body["pendingDetail"]["source"] == "netsuite"
    paced_until = datetime.fromisoformat(body["pendingDetail"]["pacedUntil"])
    assert 0.5 < paced_until.timestamp() - erp.received[0][0] <= 1.5
    row = _sources(admin_api)["netsuite"]
    assert (row["backingOff"], row["backlog"], row["inFlight"]) == (True, 4, 0)
    assert row["pacedUntil"] is not None and row["oldestBacklogAgeS"] >= 0

    time.sleep(max(0.0, paced_until.timestamp() - time.time()) + 0.05)
    pump()  # the source takes the writes now; the run goes on and commits

    run.refresh_from_db()
    assert (run.state, run.outstanding) == ("committed", 0)
    key = "turbobase-write-{}".format
    orders = [
        key(pk)
        for pk in RecordWriteState.reads.filter(record_type="salesOrder")
        .order_by("id")
        .values_list("pk", flat=True)
    ]
    assert orders[:3] == [key(first.pk), key(later[0].pk), key(later[1].pk)]
    sent_orders = [k for k in erp.sent_keys() if k in orders]
    assert sent_orders == [orders[0], *orders]  # the 429'd one again, then each in commit order
    assert key(RecordWriteState.reads.get(record=customer).pk) in erp.sent_keys()
    assert set(erp.created.values()) == {1} and len(erp.created) == 5  # each once, none twice
    assert _sources(admin_api)["netsuite"]["backingOff"] is False
    assert SourcePace.objects.get(source="netsuite").backoffs == 0


def test_a_503_without_retry_after_backs_off_exponentially_from_one_second(
    erp, alice_actor, settings
):
    settings.SOURCES_RETRY_BASE_SECONDS, settings.SOURCES_RETRY_CAP_SECONDS = 1.0, 300.0
    erp.scripted += [(503, {}), (503, {})]
    state = _order(alice_actor, "one")

    outbound_drain(record_type="salesOrder")
    first = SourcePace.objects.get(source="netsuite")
    assert first.backoffs == 1
    assert 1.0 <= (first.paced_until - first.updated_at).total_seconds() <= 1.3

    SourcePace.objects.update(paced_until=None)
    with door_open():
        RecordWriteState.objects.filter(pk=state.pk).update(next_attempt_at=None)
    outbound_drain(record_type="salesOrder")
    second = SourcePace.objects.get(source="netsuite")
    assert second.backoffs == 2
    assert 2.0 <= (second.paced_until - second.updated_at).total_seconds() <= 2.6
    state.refresh_from_db()
    assert (state.status, state.next_attempt_at) == ("pending", second.paced_until)


def test_max_per_second_spaces_the_writes_by_the_servers_clock(erp, alice_actor, admin_api):
    setting_set("sources.netsuite.max_per_second", 4)
    states = [_order(alice_actor, f"n{n}") for n in range(5)]

    while RecordWriteState.reads.filter(status="pending").exists():
        outbound_drain(record_type="salesOrder")

    arrived = [at for at, *_ in erp.received]
    assert erp.sent_keys() == [f"turbobase-write-{s.pk}" for s in states]  # in order, once each
    # Slots start 1/rate apart; what happens between a slot and the request reaching the server
    # (a first request's lazy imports, loopback jitter) can eat a few tens of milliseconds.
    jitter = 0.06
    assert arrived[-1] - arrived[0] >= (len(arrived) - 1) / 4 - jitter
    assert all(b - a >= 0.25 - jitter for a, b in zip(arrived, arrived[1:], strict=False))
    row = _sources(admin_api)["netsuite"]
    assert (row["maxPerSecond"], row["maxInFlight"], row["backlog"]) == (4, None, 0)


def test_max_in_flight_refuses_a_place_while_the_source_is_full(erp, alice_actor):
    from sources.pacing import pace_release, pace_take

    setting_set("sources.netsuite.max_in_flight", 1)
    taken = pace_take(source="netsuite", holder="w1", lease_seconds=60, horizon_s=1)
    full = pace_take(source="netsuite", holder="w2", lease_seconds=60, horizon_s=1)
    assert taken.start_at is not None and full.start_at is None and full.wait_until is not None
    assert list(SourceInFlight.objects.values_list("holder", flat=True)) == ["w1"]
    pace_release(holder="w1")
    assert pace_take(source="netsuite", holder="w2", lease_seconds=60, horizon_s=1).start_at


def test_get_sources_lists_every_catalog_source_and_is_for_administrators(
    erp, admin_api, alice_api
):
    setting_set("sources.netsuite.max_in_flight", 3)
    assert _sources(admin_api) == {
        "netsuite": {
            "name": "netsuite",
            "maxPerSecond": None,
            "maxInFlight": 3,
            "inFlight": 0,
            "backlog": 0,
            "oldestBacklogAgeS": None,
            "backingOff": False,
            "pacedUntil": None,
        }
    }
    assert alice_api.get("/v1/sources").status_code == 403


def test_the_per_source_settings_are_listed_validated_and_cleared_through_the_settings_api(
    erp, admin_api
):
    rows = {row["key"]: row for row in admin_api.get("/v1/settings").json()["settings"]}
    assert rows["sources.netsuite.max_per_second"]["value"] == 0  # 0: no limit
    assert rows["sources.netsuite.max_in_flight"]["min"] == 1

    for bad in (0, -1, 2.5, "5"):
        res = admin_api.patch(
            "/v1/settings", {"sources.netsuite.max_per_second": bad}, format="json"
        )
        assert res.status_code == 400 and res.json()["rejection"]["field"] == (
            "sources.netsuite.max_per_second"
        )
    res = admin_api.patch("/v1/settings", {"sources.nets.uite.max_per_second": 5}, format="json")
    assert res.status_code == 400

    res = admin_api.patch("/v1/settings", {"sources.netsuite.max_per_second": 5}, format="json")
    assert res.status_code == 200
    assert _sources(admin_api)["netsuite"]["maxPerSecond"] == 5
    admin_api.patch("/v1/settings", {"sources.netsuite.max_per_second": None}, format="json")
    assert _sources(admin_api)["netsuite"]["maxPerSecond"] is None


def test_retry_after_reads_seconds_and_http_dates():
    now = datetime.fromisoformat("2026-12-03T08:00:00+00:00")
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds("Thu, 03 Dec 2026 08:00:30 GMT", now=now) == 30.0
    assert retry_after_seconds("Thu, 03 Dec 2026 07:00:00 GMT", now=now) == 0.0
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def test_a_limit_changed_in_another_process_is_in_force_within_seconds(erp):
    from guardrails.models import InstanceSetting
    from sources.pacing import pace_limits

    assert pace_limits("netsuite").max_per_second is None  # read once: now it is cached
    # As another process's PATCH lands: a row written without this process's cache hearing of it.
    InstanceSetting.objects.bulk_create(
        [InstanceSetting(key="sources.netsuite.max_per_second", value=3)]
    )
    began = time.monotonic()
    while pace_limits("netsuite").max_per_second != 3:
        assert time.monotonic() - began < 5, "the new limit was not read within 5 s"
        time.sleep(0.05)


@pytest.mark.django_db(transaction=True)
def test_two_lanes_of_one_source_share_its_limits_across_connections(erp, alice_actor):
    """Two record types drain at once, each on its own thread and database connection (as two
    workers would): the source's in-flight cap and rate hold across both."""
    erp.delay = 0.4  # longer than a rate slot (0.2 s): without the cap, sends would overlap
    setting_set("sources.netsuite.max_in_flight", 1)
    setting_set("sources.netsuite.max_per_second", 5)
    orders = [_order(alice_actor, f"o{n}") for n in range(3)]
    customers = [
        RecordWriteState.reads.get(
            record=record_create(
                actor=alice_actor, record_type="customer", parent={"company_name": f"C{n}"}
            ).record
        )
        for n in range(3)
    ]
    errors: list[BaseException] = []

    def lane(record_type: str) -> None:
        try:
            while RecordWriteState.reads.filter(record_type=record_type, status="pending").exists():
                outbound_drain(record_type=record_type)
        except BaseException as exc:  # noqa: BLE001 — surfaced below: a lane's fault fails the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=lane, args=(t,)) for t in ("salesOrder", "customer")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert erp.most_active == 1  # never two writes to the source in flight at once
    arrived = sorted(at for at, *_ in erp.received)
    assert len(arrived) == 6 and set(erp.created.values()) == {1}
    assert arrived[-1] - arrived[0] >= 5 / 5 - 0.06
    for states in (orders, customers):  # each type still in its own commit order
        keys = [f"turbobase-write-{s.pk}" for s in states]
        assert [k for k in erp.sent_keys() if k in keys] == keys
