"""record_update through PATCH /v1/data: addressing, expectedSyncVersion, named fields only, refusals."""

from __future__ import annotations

import pytest

from records.boundary import record_create, record_update
from records.models import Record, RecordWriteState, WriteTrail
from records.trail import Actor
from records.verdicts import Verdict, verdict_apply

pytestmark = pytest.mark.django_db


def _customer(user, **fields) -> Record:
    parent = {"company_name": "Acme", "memo": "first", **fields}
    return record_create(actor=Actor(user=user), record_type="customer", parent=parent).record


def _synced(record: Record, external_id: str) -> Record:
    """Fake the source's confirmation of the create, through the verdict service."""
    state = RecordWriteState.reads.get(record=record, operation="create")
    verdict_apply(write_state_id=state.pk, verdict=Verdict("confirmed", external_id=external_id))
    record.refresh_from_db()
    return record


def _snapshot(record: Record) -> tuple:
    record.refresh_from_db()
    return record.fields, record.sync_version, record.sync_state, record.updated_at


def test_update_by_pg_row_id_writes_only_named_fields(alice, alice_api):
    record = _customer(alice)
    res = alice_api.patch(
        "/v1/data/customer",
        {"pgRowId": str(record.pk), "parent": {"memo": "second"}},
        format="json",
    )
    assert res.status_code == 200, res.content
    body = res.json()
    assert body["outcome"] == "updated"
    assert body["parent"] == {"company_name": "Acme", "memo": "second"}
    assert body["syncVersion"] == 2
    record.refresh_from_db()
    assert record.fields == {"company_name": "Acme", "memo": "second"}
    assert record.sync_version == 2
    update = RecordWriteState.reads.get(record=record, operation="update")
    # Only the named field travels to the source.
    assert (update.status, update.payload) == ("pending", {"parent": {"memo": "second"}})
    trail = WriteTrail.reads.get(action="update")
    assert (trail.outcome, trail.pg_row_id, trail.actor_id) == ("allowed", record.pk, alice.pk)


def test_the_updated_record_answered_is_the_row_as_stored(alice):
    record = _customer(alice)
    result = record_update(
        actor=Actor(user=alice),
        record_type="customer",
        pg_row_id=record.pk,
        parent={"memo": "second", "phone": "555"},
    )
    answered = result.record
    stored = Record.reads.get(pk=record.pk)
    assert (answered.fields, answered.sync_version, answered.updated_at) == (
        stored.fields,
        stored.sync_version,
        stored.updated_at,
    )
    assert (stored.sync_version, stored.fields["phone"]) == (2, "555")


def test_update_by_external_id(alice, alice_api):
    record = _synced(_customer(alice), "CUS-7")
    res = alice_api.patch(
        "/v1/data/customer", {"externalId": "CUS-7", "parent": {"memo": "x"}}, format="json"
    )
    assert res.status_code == 200, res.content
    assert res.json()["pgRowId"] == str(record.pk)
    assert res.json()["externalId"] == "CUS-7"
    record.refresh_from_db()
    assert record.fields == {"company_name": "Acme", "memo": "x"}


def test_update_of_app_owned_record_queues_nothing(alice, alice_api):
    record = record_create(
        actor=Actor(user=alice), record_type="legacy_customer", parent={"name": "a"}
    ).record
    res = alice_api.patch(
        "/v1/data/legacy_customer",
        {"pgRowId": str(record.pk), "parent": {"name": "b"}},
        format="json",
    )
    assert res.status_code == 200
    assert res.json()["syncState"] == "local"
    assert RecordWriteState.reads.count() == 0


def test_expected_sync_version_matching_is_written(alice, alice_api):
    record = _customer(alice)
    res = alice_api.patch(
        "/v1/data/customer",
        {"pgRowId": str(record.pk), "expectedSyncVersion": 1, "parent": {"memo": "v2"}},
        format="json",
    )
    assert res.status_code == 200
    assert res.json()["syncVersion"] == 2


def test_expected_sync_version_moved_is_409_and_changes_nothing(alice, alice_api):
    record = _customer(alice)
    alice_api.patch(
        "/v1/data/customer", {"pgRowId": str(record.pk), "parent": {"memo": "v2"}}, format="json"
    )
    before = _snapshot(record)
    states = RecordWriteState.reads.count()
    res = alice_api.patch(
        "/v1/data/customer",
        {"pgRowId": str(record.pk), "expectedSyncVersion": 1, "parent": {"memo": "stale"}},
        format="json",
    )
    assert res.status_code == 409
    assert res.json() == {
        "error": "conflict",
        "rejection": {
            "code": "SYNC_VERSION_MOVED",
            "field": "expectedSyncVersion",
            "message": "expected sync version 1, the record is at 2",
        },
    }
    assert _snapshot(record) == before
    assert RecordWriteState.reads.count() == states
    trail = WriteTrail.reads.filter(action="update").order_by("-id").first()
    assert (trail.outcome, trail.code, trail.field) == (
        "refused",
        "SYNC_VERSION_MOVED",
        "expectedSyncVersion",
    )


def test_expected_sync_version_must_be_an_integer(alice, alice_api):
    record = _customer(alice)
    res = alice_api.patch(
        "/v1/data/customer",
        {"pgRowId": str(record.pk), "expectedSyncVersion": "1", "parent": {"memo": "x"}},
        format="json",
    )
    assert res.status_code == 400
    assert res.json()["rejection"]["field"] == "expectedSyncVersion"
    assert _snapshot(record)[1] == 1


@pytest.mark.parametrize(
    "column", ["external_id", "sync_state", "owner", "sync_version", "pg_row_id"]
)
def test_protected_column_refused(alice, alice_api, column):
    record = _customer(alice)
    before = _snapshot(record)
    res = alice_api.patch(
        "/v1/data/customer",
        {"pgRowId": str(record.pk), "parent": {column: "X", "memo": "y"}},
        format="json",
    )
    assert res.status_code == 400
    assert res.json() == {
        "error": "invalid_request",
        "rejection": {
            "code": "PROTECTED_FIELD",
            "field": f"parent.{column}",
            "message": f"{column} is a protected column and cannot be written",
        },
    }
    assert _snapshot(record) == before
    assert RecordWriteState.reads.filter(operation="update").count() == 0


def test_empty_parent_refused(alice, alice_api):
    record = _customer(alice)
    res = alice_api.patch(
        "/v1/data/customer", {"pgRowId": str(record.pk), "parent": {}}, format="json"
    )
    assert res.status_code == 400
    assert res.json()["rejection"]["field"] == "parent"
    assert _snapshot(record)[1] == 1


@pytest.mark.parametrize(
    "address",
    [{}, {"pgRowId": "PLACEHOLDER", "externalId": "CUS-1"}, {"pgRowId": None, "externalId": ""}],
)
def test_neither_or_both_address_keys_is_400_naming_the_field(alice, alice_api, address):
    record = _customer(alice)
    if address.get("pgRowId") == "PLACEHOLDER":
        address["pgRowId"] = str(record.pk)
    before = _snapshot(record)
    res = alice_api.patch("/v1/data/customer", {**address, "parent": {"memo": "x"}}, format="json")
    assert res.status_code == 400
    assert res.json() == {
        "error": "invalid_request",
        "rejection": {
            "code": "INVALID_PAYLOAD",
            "field": "pgRowId",
            "message": "name the record by exactly one of pgRowId or externalId",
        },
    }
    assert _snapshot(record) == before


@pytest.mark.parametrize("bad", ["not-a-uuid", "1234", 42, "00000000-0000-0000-0000-00000000000Z"])
def test_malformed_pg_row_id_is_404_not_500(alice, alice_api, bad):
    _customer(alice)
    res = alice_api.patch(
        "/v1/data/customer", {"pgRowId": bad, "parent": {"memo": "x"}}, format="json"
    )
    assert res.status_code == 404
    body = res.json()
    assert body["error"] == "record_not_found"
    assert (body["rejection"]["code"], body["rejection"]["field"]) == (
        "RECORD_NOT_FOUND",
        "pgRowId",
    )


def test_unknown_pg_row_id_is_404(alice, alice_api):
    _customer(alice)
    missing = "00000000-0000-0000-0000-000000000001"
    res = alice_api.patch(
        "/v1/data/customer", {"pgRowId": missing, "parent": {"memo": "x"}}, format="json"
    )
    assert res.status_code == 404
    assert res.json() == {
        "error": "record_not_found",
        "rejection": {
            "code": "RECORD_NOT_FOUND",
            "field": "pgRowId",
            "message": f"no customer record you can see has pgRowId {missing!r}",
        },
    }


def test_unknown_external_id_is_404_never_a_create(alice, alice_api):
    _customer(alice)
    res = alice_api.patch(
        "/v1/data/customer", {"externalId": "CUS-404", "parent": {"memo": "x"}}, format="json"
    )
    assert res.status_code == 404
    assert res.json()["rejection"]["field"] == "externalId"
    assert Record.reads.count() == 1


def test_row_the_caller_cannot_see_is_404(alice, bob_api):
    record = record_create(
        actor=Actor(user=alice), record_type="legacy_customer", parent={"name": "a"}
    ).record
    res = bob_api.patch(
        "/v1/data/legacy_customer",
        {"pgRowId": str(record.pk), "parent": {"name": "b"}},
        format="json",
    )
    assert res.status_code == 404
    assert res.json()["rejection"]["code"] == "RECORD_NOT_FOUND"
    record.refresh_from_db()
    assert (record.fields, record.sync_version) == ({"name": "a"}, 1)


def test_address_of_another_type_is_404(alice, alice_api):
    record = _customer(alice)
    res = alice_api.patch(
        "/v1/data/entity", {"pgRowId": str(record.pk), "parent": {"memo": "x"}}, format="json"
    )
    assert res.status_code == 404
    assert _snapshot(record)[1] == 1


def test_unknown_type_is_404(alice_api):
    res = alice_api.patch("/v1/data/nope", {"pgRowId": "x", "parent": {"a": 1}}, format="json")
    assert res.status_code == 404
    assert res.json() == {"error": "record_type_not_found", "id": "nope"}


# -- settle: link a row whose upstream create landed but whose link back failed ------------------


def _settle_conflict(record: Record, external_id: str) -> None:
    state = RecordWriteState.reads.get(record=record, operation="create")
    verdict_apply(
        write_state_id=state.pk, verdict=Verdict("settle_conflict", external_id=external_id)
    )


def test_settle_links_the_id_from_the_write_state(alice, alice_api):
    record = _customer(alice)
    _settle_conflict(record, "CUS-11")
    res = alice_api.post("/v1/data/customer/settle", {"pgRowId": str(record.pk)}, format="json")
    assert res.status_code == 200, res.content
    assert (res.json()["outcome"], res.json()["externalId"], res.json()["syncState"]) == (
        "settled",
        "CUS-11",
        "synced",
    )
    state = RecordWriteState.reads.get(record=record, operation="create")
    assert (state.status, state.external_id) == ("settled", "CUS-11")
    trail = WriteTrail.reads.get(action="settle")
    assert (trail.outcome, trail.pg_row_id) == ("settled", record.pk)


def test_settle_of_a_record_not_in_conflict_is_409(alice, alice_api):
    record = _customer(alice)
    res = alice_api.post("/v1/data/customer/settle", {"pgRowId": str(record.pk)}, format="json")
    assert res.status_code == 409
    assert res.json() == {
        "error": "conflict",
        "rejection": {
            "code": "NOT_SETTLE_CONFLICT",
            "field": "pgRowId",
            "message": f"customer {record.pk} is pending, not waiting to be settled",
        },
    }
    record.refresh_from_db()
    assert (record.sync_state, record.external_id) == ("pending", None)
    trail = WriteTrail.reads.get(action="settle")
    assert (trail.outcome, trail.code) == ("refused", "NOT_SETTLE_CONFLICT")


def test_settle_needs_a_pg_row_id(alice_api):
    res = alice_api.post("/v1/data/customer/settle", {}, format="json")
    assert res.status_code == 400
    assert res.json()["rejection"]["field"] == "pgRowId"
