"""Declared fields: the catalog's columns are the only ones a write may set or a read may name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import override_settings

from records.boundary import record_create
from records.catalog import catalog_load, catalog_reset
from records.models import Record
from records.trail import Actor

pytestmark = pytest.mark.django_db


def _refusal(res) -> dict:
    assert res.status_code == 422, res.content
    assert res.json()["error"] == "write_refused"
    return res.json()["rejection"]


def test_an_undeclared_field_is_refused_naming_it_and_nothing_is_written(alice_api):
    res = alice_api.post(
        "/v1/data/customer", {"parent": {"company_name": "Acme", "colour": "red"}}, format="json"
    )
    rejection = _refusal(res)
    assert (rejection["code"], rejection["field"]) == ("FIELD_UNDECLARED", "parent.colour")
    assert rejection["message"].startswith(
        "'colour' is not a field of customer (its fields: company_name, "
    )
    assert not Record.reads.exists()


def test_a_mistyped_field_is_refused_naming_it(alice_api):
    res = alice_api.post("/v1/data/customer", {"parent": {"company_name": 42}}, format="json")
    assert _refusal(res) == {
        "code": "FIELD_TYPE_INVALID",
        "field": "parent.company_name",
        "message": "parent.company_name: 42 is not of type 'string'",
    }
    assert not Record.reads.exists()


def test_line_fields_are_declared_too(alice_api):
    res = alice_api.post(
        "/v1/data/purchaseOrder",
        {
            "parent": {"entity_id": "V-1"},
            "lines": [{"item": "widget", "quantity": 2}, {"item": "bolt", "colour": "red"}],
        },
        format="json",
    )
    assert (_refusal(res)["code"], _refusal(res)["field"]) == (
        "FIELD_UNDECLARED",
        "lines[1].colour",
    )
    res = alice_api.post(
        "/v1/data/purchaseOrder",
        {
            "parent": {"entity_id": "V-1"},
            "lines": [{"item": "widget", "quantity": "two"}],
        },
        format="json",
    )
    assert (_refusal(res)["code"], _refusal(res)["field"]) == (
        "FIELD_TYPE_INVALID",
        "lines[0].quantity",
    )
    assert not Record.reads.exists()


def test_an_update_is_checked_and_null_clears_a_declared_field(alice, alice_api):
    record = record_create(
        actor=Actor(user=alice),
        record_type="legacy_customer",
        parent={"company_name": "Acme", "note": "keep me"},
    ).record
    res = alice_api.patch(
        "/v1/data/legacy_customer",
        {"pgRowId": str(record.pk), "parent": {"nickname": "A"}},
        format="json",
    )
    assert _refusal(res)["field"] == "parent.nickname"
    assert Record.reads.get(pk=record.pk).fields == {"company_name": "Acme", "note": "keep me"}
    res = alice_api.patch(
        "/v1/data/legacy_customer",
        {"pgRowId": str(record.pk), "parent": {"note": None}},
        format="json",
    )
    assert res.status_code == 200, res.content
    assert Record.reads.get(pk=record.pk).fields == {"company_name": "Acme", "note": None}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("select=company_name,colour", "select"),
        ("colour=eq.red", "colour"),
        ("order=colour", "order"),
    ],
)
def test_a_read_naming_an_undeclared_column_is_400_naming_it(alice_api, query, field):
    res = alice_api.get(f"/v1/rest/customer?{query}")
    assert res.status_code == 400, res.content
    assert res.json()["rejection"]["code"] == "UNKNOWN_COLUMN"
    assert res.json()["rejection"]["field"] == field
    assert "'colour' is not a column of customer" in res.json()["rejection"]["message"]


def test_a_declared_column_no_row_carries_yet_reads_as_null(alice, alice_api):
    record_create(
        actor=Actor(user=alice),
        record_type="legacy_customer",
        parent={"id": "L-1", "company_name": "A"},
    )
    res = alice_api.get(
        "/v1/rest/legacy_customer?select=id,company_name,migrated_at&migrated_at=is.null"
    )
    assert res.status_code == 200, res.content
    assert res.json() == [{"id": "L-1", "company_name": "A", "migrated_at": None}]


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"$ref": "file:///etc/passwd"}, "note.fields.memo.$ref: 'file:///etc/passwd' is not a "),
        ({"$ref": "#"}, "note.fields.memo.$ref: '#' leads back to itself"),
        ({"type": "strin"}, "note.fields.memo.type: is not a valid JSON Schema"),
    ],
)
def test_a_catalog_field_schema_that_is_not_one_usable_document_fails_the_load_by_name(
    tmp_path: Path, schema, where
):
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"types": {"note": {"fields": {"memo": schema}}}}))
    with override_settings(TURBOBASE_CATALOG=str(path)):
        catalog_reset()
        with pytest.raises(ValueError) as refused:
            catalog_load()
    assert str(refused.value).startswith(f"catalog: {where}"), str(refused.value)
