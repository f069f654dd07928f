"""Row-level security and write entitlement, through every route that reaches a record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import override_settings

from records.boundary import record_create
from records.catalog import catalog_reset, record_type_get
from records.models import Record, RecordWriteState, WriteTrail
from records.policies import records_visible, records_writable
from records.trail import Actor
from tests.conftest import client_for, make_user

pytestmark = pytest.mark.django_db


def _visible_ids(user, record_type: str) -> set[str]:
    rows = records_visible(user=user, record_type=record_type_get(record_type))
    return {str(pk) for pk in rows.values_list("pg_row_id", flat=True)}


@pytest.fixture
def alices_legacy(alice) -> Record:
    return record_create(
        actor=Actor(user=alice), record_type="legacy_customer", parent={"name": "a"}
    ).record


def test_owner_scoped_record_is_invisible_to_another_user(alice, bob, alices_legacy):
    assert _visible_ids(alice, "legacy_customer") == {str(alices_legacy.pk)}
    assert _visible_ids(bob, "legacy_customer") == set()
    assert not records_writable(user=bob, record_type=record_type_get("legacy_customer")).exists()


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("patch", "/v1/data/legacy_customer", {"parent": {"name": "b"}}),
        ("delete", "/v1/data/legacy_customer", {}),
        ("post", "/v1/data/legacy_customer/settle", {}),
    ],
)
def test_user_b_cannot_change_delete_or_settle_user_as_record(
    alices_legacy, bob_api, method, path, body
):
    res = getattr(bob_api, method)(path, {"pgRowId": str(alices_legacy.pk), **body}, format="json")
    assert res.status_code == 404
    assert res.json()["error"] == "record_not_found"
    assert res.json()["rejection"]["code"] == "RECORD_NOT_FOUND"
    alices_legacy.refresh_from_db()
    assert (alices_legacy.fields, alices_legacy.sync_version, alices_legacy.sync_state) == (
        {"name": "a"},
        1,
        "local",
    )


def test_the_404_for_someone_elses_record_equals_the_404_for_no_record(alices_legacy, bob_api):
    """The answer must not reveal that the row exists."""
    missing = "00000000-0000-0000-0000-000000000009"
    theirs = bob_api.patch(
        "/v1/data/legacy_customer",
        {"pgRowId": str(alices_legacy.pk), "parent": {"n": 1}},
        format="json",
    ).json()
    nothing = bob_api.patch(
        "/v1/data/legacy_customer", {"pgRowId": missing, "parent": {"n": 1}}, format="json"
    ).json()
    assert theirs["rejection"]["message"].replace(str(alices_legacy.pk), "X") == nothing[
        "rejection"
    ]["message"].replace(missing, "X")


def test_administrator_sees_changes_and_deletes_all(admin_user, admin_api, alices_legacy):
    assert _visible_ids(admin_user, "legacy_customer") == {str(alices_legacy.pk)}
    res = admin_api.patch(
        "/v1/data/legacy_customer",
        {"pgRowId": str(alices_legacy.pk), "parent": {"name": "z"}},
        format="json",
    )
    assert res.status_code == 200
    assert res.json()["parent"] == {"name": "z"}
    res = admin_api.delete(
        "/v1/data/legacy_customer", {"pgRowId": str(alices_legacy.pk)}, format="json"
    )
    assert res.status_code == 200
    assert not Record.reads.filter(pk=alices_legacy.pk).exists()
    assert WriteTrail.reads.filter(actor_id=admin_user.pk).count() == 2


def test_group_policy_shows_a_record_to_a_group_mate_only(db):
    buyer = make_user("buyer", groups=("purchasing",))
    mate = make_user("mate", groups=("purchasing",))
    stranger = make_user("stranger", groups=("sales",))
    po = record_create(
        actor=Actor(user=buyer),
        record_type="purchaseOrder",
        parent={"entity_id": "V1"},
        lines=[{"item": "x"}],
    ).record
    assert po.group.name == "purchasing"
    assert _visible_ids(mate, "purchaseOrder") == {str(po.pk)}
    assert _visible_ids(stranger, "purchaseOrder") == set()
    # The group-mate may change it too (write policy follows read policy); the stranger gets 404.
    res = client_for(mate).patch(
        "/v1/data/purchaseOrder", {"pgRowId": str(po.pk), "parent": {"memo": "m"}}, format="json"
    )
    assert res.status_code == 200
    res = client_for(stranger).patch(
        "/v1/data/purchaseOrder", {"pgRowId": str(po.pk), "parent": {"memo": "s"}}, format="json"
    )
    assert res.status_code == 404
    res = client_for(stranger).delete(
        "/v1/data/purchaseOrder", {"pgRowId": str(po.pk)}, format="json"
    )
    assert res.status_code == 404
    po.refresh_from_db()
    assert (po.fields, po.sync_state) == ({"entity_id": "V1", "memo": "m"}, "pending")


def test_read_policy_all_is_visible_to_everyone(alice, bob):
    customer = record_create(
        actor=Actor(user=alice), record_type="customer", parent={"company_name": "A"}
    ).record
    assert _visible_ids(bob, "customer") == {str(customer.pk)}


def test_hidden_records_are_never_visible_even_to_an_administrator(alice, admin_user, alice_api):
    customer = record_create(
        actor=Actor(user=alice), record_type="customer", parent={"company_name": "A"}
    ).record
    alice_api.delete("/v1/data/customer", {"pgRowId": str(customer.pk)}, format="json")
    assert _visible_ids(admin_user, "customer") == set()


# -- per-type write entitlement ----------------------------------------------------------------


@pytest.fixture
def entitled_catalog(tmp_path: Path):
    catalog = {
        "sources": {"netsuite": {"adapter": "sandbox"}},
        "types": {
            "customer": {"source": "netsuite", "read": "all", "writeGroups": ["ar"]},
            "note": {"source": None, "read": "all", "write": "owner", "protected": ["approved_by"]},
        },
    }
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(catalog))
    with override_settings(TURBOBASE_CATALOG=str(path)):
        catalog_reset()
        yield
    catalog_reset()


def test_write_not_entitled_without_a_write_group(entitled_catalog, alice_api):
    res = alice_api.post("/v1/data/customer", {"parent": {"company_name": "A"}}, format="json")
    assert res.status_code == 403
    assert res.json() == {
        "error": "write_refused",
        "rejection": {
            "code": "WRITE_NOT_ENTITLED",
            "field": None,
            "message": "writing customer needs membership of one of: ar",
        },
    }
    assert Record.reads.count() == 0
    trail = WriteTrail.reads.get()
    assert (trail.outcome, trail.code) == ("refused", "WRITE_NOT_ENTITLED")


def test_write_entitlement_covers_update_and_delete(entitled_catalog, alice):
    clerk = make_user("clerk", groups=("ar",))
    record = record_create(
        actor=Actor(user=clerk), record_type="customer", parent={"company_name": "A"}
    ).record
    api = client_for(alice)
    res = api.patch(
        "/v1/data/customer", {"pgRowId": str(record.pk), "parent": {"memo": "x"}}, format="json"
    )
    assert (res.status_code, res.json()["rejection"]["code"]) == (403, "WRITE_NOT_ENTITLED")
    res = api.delete("/v1/data/customer", {"pgRowId": str(record.pk)}, format="json")
    assert (res.status_code, res.json()["rejection"]["code"]) == (403, "WRITE_NOT_ENTITLED")
    record.refresh_from_db()
    assert (record.fields, record.sync_state) == ({"company_name": "A"}, "pending")
    assert RecordWriteState.reads.filter(operation__in=("update", "delete")).count() == 0


def test_member_of_a_write_group_and_an_administrator_may_write(entitled_catalog, admin_api):
    clerk = make_user("clerk", groups=("ar",))
    assert (
        client_for(clerk)
        .post("/v1/data/customer", {"parent": {"company_name": "A"}}, format="json")
        .status_code
        == 201
    )
    assert (
        admin_api.post(
            "/v1/data/customer", {"parent": {"company_name": "B"}}, format="json"
        ).status_code
        == 201
    )


def test_write_policy_owner_lets_others_read_but_not_change(entitled_catalog, alice, bob):
    note = record_create(actor=Actor(user=alice), record_type="note", parent={"text": "t"}).record
    assert _visible_ids(bob, "note") == {str(note.pk)}
    res = client_for(bob).patch(
        "/v1/data/note", {"pgRowId": str(note.pk), "parent": {"text": "u"}}, format="json"
    )
    assert res.status_code == 404
    note.refresh_from_db()
    assert note.fields == {"text": "t"}


def test_catalog_protected_field_refused(entitled_catalog, alice_api):
    res = alice_api.post(
        "/v1/data/note", {"parent": {"text": "t", "approved_by": "me"}}, format="json"
    )
    assert res.status_code == 400
    assert res.json()["rejection"]["field"] == "parent.approved_by"
    assert Record.reads.count() == 0
