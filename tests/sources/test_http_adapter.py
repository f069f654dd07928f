"""The ``http`` adapter against a real HTTP server on 127.0.0.1 that the test starts and scripts."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from guardrails.rules import rule_set
from records.boundary import record_create, record_delete, record_update
from records.door import door_open
from records.models import Record, RecordWriteState
from sources.models import SourcePace
from tests.sources.conftest import drain

pytestmark = pytest.mark.django_db


@dataclass
class FakeErp:
    """Answers queued per request (status, body, delay); every request is kept for assertions."""

    port: int = 0
    answers: list[tuple[int, object, float]] = field(default_factory=list)
    requests: list[dict] = field(default_factory=list)

    def answer(self, status: int, body: object = None, *, delay: float = 0.0) -> None:
        self.answers.append((status, body, delay))


def _handler(erp: FakeErp):
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            erp.requests.append(
                {
                    "method": self.command,
                    "path": self.path,
                    "body": json.loads(raw) if raw else None,
                    "idempotencyKey": self.headers.get("Idempotency-Key"),
                }
            )
            status, body, delay = (
                erp.answers.pop(0) if erp.answers else (500, {"message": "unscripted"}, 0)
            )
            if delay:
                time.sleep(delay)
            payload = (
                body.encode()
                if isinstance(body, str)
                else (json.dumps(body).encode() if body is not None else b"")
            )
            self.send_response(status)
            self.send_header(
                "Content-Type", "application/json" if not isinstance(body, str) else "text/plain"
            )
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_POST = do_PATCH = do_DELETE = _serve

        def log_message(self, *args) -> None:  # keep test output clean
            pass

    return Handler


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        pass  # a client that timed out and left is part of the test, not an error


@pytest.fixture
def erp(use_catalog, settings):
    fake = FakeErp()
    server = _QuietServer(("127.0.0.1", 0), _handler(fake))
    fake.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    use_catalog(
        sources={
            "erp": {"adapter": "http", "url": f"http://127.0.0.1:{fake.port}", "timeout": 0.5}
        },
        types={
            "order": {"source": "erp", "sourceRequired": ["customer"], "idPrefix": "ORD"},
            "vendor": {"source": "erp"},
        },
    )
    # One retry at a time in these tests: each drain makes one attempt and schedules the next.
    settings.SOURCES_RETRY_BASE_SECONDS, settings.SOURCES_RETRY_CAP_SECONDS = 60, 300
    yield fake
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def _order(actor) -> Record:
    return record_create(
        actor=actor, record_type="order", parent={"customer": "C1"}, lines=[{"sku": "A"}]
    ).record


def _state(record: Record, operation: str = "create") -> RecordWriteState:
    return RecordWriteState.reads.filter(record=record, operation=operation).latest("id")


def _make_due(state: RecordWriteState) -> None:
    from django.utils import timezone

    with door_open():
        RecordWriteState.objects.filter(pk=state.pk).update(next_attempt_at=timezone.now())
    # A 503 or a timeout also holds back the whole source (sources.pacing): its wait is over too.
    SourcePace.objects.filter(source=state.source_system).update(paced_until=None)


def test_2xx_with_external_id_confirms(erp, alice_actor):
    erp.answer(201, {"externalId": "ORD-77"})
    record = _order(alice_actor)

    drain("order")

    assert erp.requests == [
        {
            "method": "POST",
            "path": "/order",
            "idempotencyKey": f"turbobase-write-{_state(record).pk}",
            "body": {
                "pgRowId": str(record.pk),
                "parent": {"customer": "C1"},
                "lines": [{"sku": "A"}],
            },
        }
    ]
    record.refresh_from_db()
    assert (record.external_id, record.sync_state) == ("ORD-77", "synced")
    assert record.synced_at is not None
    assert (_state(record).status, _state(record).external_id) == ("confirmed", "ORD-77")


def test_4xx_refusal_is_parked_with_the_sources_sentence(erp, alice_actor):
    erp.answer(
        422,
        {
            "code": "CREDIT_HOLD",
            "field": "parent.customer",
            "message": "Customer C1 is on credit hold",
        },
    )
    record = _order(alice_actor)

    drain("order")

    state = _state(record)
    assert (state.status, state.reason_code, state.field, state.message) == (
        "refused",
        "CREDIT_HOLD",
        "parent.customer",
        "Customer C1 is on credit hold",
    )
    record.refresh_from_db()
    assert record.sync_state == "parked"


def test_4xx_in_plain_text_is_still_the_sources_sentence(erp, alice_actor):
    erp.answer(400, "Bad customer")
    record = _order(alice_actor)

    drain("order")

    state = _state(record)
    assert (state.status, state.reason_code, state.field, state.message) == (
        "refused",
        "SOURCE_REFUSED",
        "",
        "Bad customer",
    )


def test_5xx_is_transient_then_retried_and_synced(erp, alice_actor):
    erp.answer(503, {"message": "maintenance"})
    erp.answer(201, {"externalId": "ORD-78"})
    record = _order(alice_actor)

    drain("order")

    state = _state(record)
    assert (state.status, state.attempts, state.reason_code, state.message) == (
        "pending",
        1,
        "TRANSIENT",
        "erp answered HTTP 503",
    )
    record.refresh_from_db()
    assert record.sync_state == "pending"

    _make_due(state)
    drain("order")

    state.refresh_from_db()
    record.refresh_from_db()
    assert (state.status, state.attempts, record.external_id, record.sync_state) == (
        "confirmed",
        1,
        "ORD-78",
        "synced",
    )
    assert [r["idempotencyKey"] for r in erp.requests] == [f"turbobase-write-{state.pk}"] * 2


def test_a_timeout_is_transient(erp, alice_actor):
    erp.answer(201, {"externalId": "ORD-79"}, delay=1.5)
    record = _order(alice_actor)

    drain("order")

    state = _state(record)
    assert (state.status, state.attempts, state.message) == (
        "pending",
        1,
        "erp did not answer within 0.5s",
    )


def test_a_connection_error_is_transient(use_catalog, alice_actor, settings):
    settings.SOURCES_RETRY_BASE_SECONDS, settings.SOURCES_RETRY_CAP_SECONDS = 60, 300
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    use_catalog(
        sources={"erp": {"adapter": "http", "url": f"http://127.0.0.1:{port}"}},
        types={"order": {"source": "erp"}},
    )
    record = record_create(actor=alice_actor, record_type="order", parent={"customer": "C1"}).record

    drain("order")

    state = _state(record)
    assert (state.status, state.attempts) == ("pending", 1)
    assert state.message.startswith("erp could not be reached: ")


def test_update_patches_and_delete_deletes_by_external_id(erp, alice_actor):
    rule_set(record_type="order", action="delete", decision="allow")
    erp.answer(201, {"externalId": "ORD 80/A"})
    erp.answer(200, {"externalId": "ORD 80/A"})
    erp.answer(204)
    record = _order(alice_actor)
    drain("order")
    record_update(
        actor=alice_actor, record_type="order", pg_row_id=record.pk, parent={"memo": "rush"}
    )
    drain("order")
    record_delete(actor=alice_actor, record_type="order", pg_row_id=record.pk)

    drain("order")

    assert [(r["method"], r["path"], r["body"]) for r in erp.requests] == [
        (
            "POST",
            "/order",
            {"pgRowId": str(record.pk), "parent": {"customer": "C1"}, "lines": [{"sku": "A"}]},
        ),
        ("PATCH", "/order/ORD%2080%2FA", {"pgRowId": str(record.pk), "parent": {"memo": "rush"}}),
        ("DELETE", "/order/ORD%2080%2FA", None),
    ]
    record.refresh_from_db()
    assert record.sync_state == "deleted"
    assert [s.status for s in RecordWriteState.reads.filter(record=record).order_by("id")] == [
        "confirmed"
    ] * 3


def test_a_create_answered_without_an_id_is_parked_not_resent(erp, alice_actor):
    erp.answer(201, {"ok": True})
    record = _order(alice_actor)

    drain("order")

    state = _state(record)
    assert (state.status, state.reason_code, state.field, state.message) == (
        "refused",
        "SOURCE_ANSWER_INVALID",
        "externalId",
        "erp accepted the create but answered no externalId",
    )
    assert len(erp.requests) == 1


def test_a_type_without_an_url_stays_queued(use_catalog, alice_actor, settings):
    settings.SOURCES_RETRY_BASE_SECONDS, settings.SOURCES_RETRY_CAP_SECONDS = 60, 300
    use_catalog(sources={"erp": {"adapter": "http"}}, types={"order": {"source": "erp"}})
    record = record_create(actor=alice_actor, record_type="order", parent={}).record

    drain("order")

    assert (_state(record).status, _state(record).message) == (
        "pending",
        "source 'erp' has no url in the catalog",
    )
