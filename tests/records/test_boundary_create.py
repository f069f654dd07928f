"""record_create through /v1/data: happy path, idempotency, refusals that change nothing."""

from __future__ import annotations

import pytest

from records.models import Record, RecordWriteState, WriteTrail

pytestmark = pytest.mark.django_db


def test_create_connected_record_queues_outbound_write(alice_api):
    res = alice_api.post(
        "/v1/data/purchaseOrder",
        {"parent": {"entity_id": "V1"}, "lines": [{"item": "x"}]},
        format="json",
    )
    assert res.status_code == 201, res.content
    body = res.json()
    assert body["syncState"] == "pending"
    assert body["externalId"] is None
    assert body["parent"] == {"entity_id": "V1"}
    record = Record.reads.get(pk=body["pgRowId"])
    assert record.source_system == "netsuite"
    state = RecordWriteState.reads.get(record=record)
    assert (state.operation, state.status) == ("create", "pending")
    assert (
        WriteTrail.reads.filter(pg_row_id=record.pk, outcome="allowed", action="create").count()
        == 1
    )


def test_unknown_record_type_is_404(alice_api):
    res = alice_api.post("/v1/data/nope", {"parent": {}}, format="json")
    assert res.status_code == 404
    assert res.json() == {"error": "record_type_not_found", "id": "nope"}


def test_transaction_without_lines_refused_atomic_write_required(alice_api):
    res = alice_api.post("/v1/data/vendorBill", {"parent": {"entity_id": "V1"}}, format="json")
    assert res.status_code == 422
    assert res.json()["error"] == "write_refused"
    assert res.json()["rejection"]["code"] == "ATOMIC_WRITE_REQUIRED"
    assert res.json()["rejection"]["field"] == "lines"
    assert Record.reads.count() == 0
    assert RecordWriteState.reads.count() == 0
    trail = WriteTrail.reads.get()
    assert (trail.outcome, trail.code) == ("refused", "ATOMIC_WRITE_REQUIRED")


def test_transformed_transaction_needs_no_lines(alice_api):
    res = alice_api.post(
        "/v1/data/vendorBill",
        {"parent": {"entity_id": "V1", "created_from_id": "PO-1"}},
        format="json",
    )
    assert res.status_code == 201


def test_protected_field_refused(alice_api):
    res = alice_api.post(
        "/v1/data/customer", {"parent": {"company_name": "A", "external_id": "X"}}, format="json"
    )
    assert res.status_code == 400
    assert res.json()["rejection"] == {
        "code": "PROTECTED_FIELD",
        "field": "parent.external_id",
        "message": "external_id is a protected column and cannot be written",
    }
    assert Record.reads.count() == 0


def test_required_field_missing(alice_api):
    res = alice_api.post(
        "/v1/data/migration_item", {"parent": {"company_name": "A"}}, format="json"
    )
    assert res.status_code == 422
    assert res.json()["rejection"] == {
        "code": "REQUIRED_FIELD_MISSING",
        "field": "parent.legacy_id",
        "message": "legacy_id is required",
    }
    assert Record.reads.count() == 0


def test_idempotency_key_returns_first_record_and_writes_nothing(alice_api):
    first = alice_api.post(
        "/v1/data/customer",
        {"parent": {"company_name": "A"}, "idempotencyKey": "k1"},
        format="json",
    )
    again = alice_api.post(
        "/v1/data/customer",
        {"parent": {"company_name": "B"}, "idempotencyKey": "k1"},
        format="json",
    )
    assert first.status_code == 201 and again.status_code == 200
    assert again.json()["pgRowId"] == first.json()["pgRowId"]
    assert again.json()["parent"] == {"company_name": "A"}
    assert again.json()["outcome"] == "duplicate"
    assert Record.reads.count() == 1
    assert RecordWriteState.reads.count() == 1


def test_no_credentials_is_401(client):
    res = client.post("/v1/data/customer", {"parent": {}}, content_type="application/json")
    assert res.status_code == 401
    assert res.json()["error"] == "not_authenticated"
