"""Authors' JSON Schemas: one document each, never fetched from anywhere, never a crash.

``schema_problem`` is the deploy's check (the first reason, named by where it is inside the
schema); ``schema_errors`` applies a schema and answers only validation errors or
``SchemaUnusable``, whatever was stored.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kernel.schemas import SchemaProblem, SchemaUnusable, schema_errors, schema_problem
from kernel.schemas import schema_validator as validator
from tests.silent_server import silent_server

NOT_INSIDE = "is not a reference inside this schema"
NOWHERE = "points at nothing in this schema"
NEVER_ENDS = "leads back to itself without looking inside the value"

A_TO_B_TO_A = {
    "$ref": "#/$defs/a",
    "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
}


@pytest.mark.parametrize(
    ("schema", "field", "message"),
    [
        ({"$ref": "file:///etc/passwd"}, "$ref", f"'file:///etc/passwd' {NOT_INSIDE}"),
        (
            {"properties": {"x": {"$ref": "http://internal-host/s.json"}}},
            "properties.x.$ref",
            f"'http://internal-host/s.json' {NOT_INSIDE}",
        ),
        (  # a relative reference under a remote $id is a remote reference
            {"$id": "http://internal-host/", "properties": {"x": {"$ref": "s.json"}}},
            "properties.x.$ref",
            f"'s.json' {NOT_INSIDE}",
        ),
        (
            {"properties": {"x": {"$id": "http://internal-host/x", "type": "string"}}},
            "properties.x.$id",
            "$id inside a schema makes that part another document",
        ),
        (
            {"allOf": [{"$schema": "http://json-schema.org/draft-07/schema#"}]},
            "allOf[0].$schema",
            "$schema inside a schema switches that part to another dialect",
        ),
        (
            {"$dynamicRef": "http://internal-host/x"},
            "$dynamicRef",
            f"'http://internal-host/x' {NOT_INSIDE}",
        ),
        ({"$ref": "#/$defs/missing"}, "$ref", f"'#/$defs/missing' {NOWHERE}"),
        ({"$ref": "#nowhere"}, "$ref", f"'#nowhere' {NOWHERE}"),
        ({"$ref": "#"}, "$ref", f"'#' {NEVER_ENDS}"),
        (A_TO_B_TO_A, "$defs.a.$ref", f"'#/$defs/b' {NEVER_ENDS}"),
        ({"allOf": [{"$ref": "#"}]}, "allOf[0].$ref", f"'#' {NEVER_ENDS}"),
        (  # a string goes no further, anything else recurses for ever
            {"$defs": {"a": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/a"}]}}},
            "$defs.a.anyOf[1].$ref",
            f"'#/$defs/a' {NEVER_ENDS}",
        ),
        (
            {"$ref": "#/properties", "properties": {"type": {"type": "string"}}},
            "$ref",
            "'#/properties' points at something that is not a valid JSON Schema",
        ),
        (
            {"$ref": "#/required", "required": ["a"]},
            "$ref",
            "'#/required' points at something that is not a JSON Schema",
        ),
        ({"type": "objekt"}, "type", "is not a valid JSON Schema: "),
        ({"allOf": [{"type": "objekt"}]}, "allOf[0].type", "is not a valid JSON Schema: "),
        ([1], "", "is not a valid JSON Schema: "),
    ],
)
def test_a_schema_that_is_not_one_usable_document_is_named_where_it_fails(schema, field, message):
    problem = schema_problem(schema)
    assert problem is not None
    assert problem.field == field
    assert problem.message.startswith(message), problem.message


def test_a_schema_nested_too_deeply_to_check_is_a_problem_not_a_crash():
    schema: dict = {"type": "string"}
    for _ in range(300):
        schema = {"properties": {"a": schema}}
    assert schema_problem(schema) == SchemaProblem("", "is nested too deeply to check")


@pytest.mark.parametrize(
    "schema",
    [
        True,
        {"type": "object", "properties": {"x": {"type": "string"}}},
        {"$ref": "#/$defs/a", "$defs": {"a": {"type": "string"}}},
        {"$defs": {"a": {"$anchor": "name", "type": "string"}}, "$ref": "#name"},
        {  # a tree: each $ref is one level further down the value
            "$ref": "#/$defs/node",
            "$defs": {
                "node": {
                    "type": "object",
                    "properties": {
                        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
                    },
                }
            },
        },
        {"properties": {"next": {"$ref": "#"}}},
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://example.com/order",
            "$ref": "#/$defs/a",
            "$defs": {"a": {"type": "object"}},
        },
        {"properties": {"$ref": {"type": "string"}}},  # a property that happens to be named $ref
        {"const": {"$ref": "http://internal-host/"}},  # a value, never applied as a schema
        {"$ref": "#/$defs/a%20b", "$defs": {"a b": {"type": "string"}}},
    ],
)
def test_a_schema_that_refers_only_to_its_own_parts_is_usable(schema):
    assert schema_problem(schema) is None


def test_a_usable_schema_answers_its_validation_errors():
    schema = {"$ref": "#/$defs/a", "$defs": {"a": {"type": "string"}}}
    assert [e.message for e in schema_errors(validator(schema), 7)] == ["7 is not of type 'string'"]
    assert schema_errors(validator(schema), "x") == []


@pytest.mark.parametrize(
    "schema_of",
    [
        lambda url: {"$ref": url},
        lambda url: {"$id": url, "properties": {"x": {"$ref": "other.json"}}},
        lambda url: {"properties": {"x": {"$dynamicRef": url}}},
    ],
)
def test_applying_a_stored_remote_reference_connects_nowhere_and_refuses_at_once(schema_of):
    with silent_server() as server:
        schema = schema_of(server.url())
        started = time.monotonic()
        with pytest.raises(SchemaUnusable) as caught:
            schema_errors(validator(schema), {"x": 1})
        assert time.monotonic() - started < 1
        assert server.accepted == 0
    assert caught.value.problem == schema_problem(schema)
    assert NOT_INSIDE in caught.value.message


def test_applying_a_stored_file_reference_reads_nothing(tmp_path: Path):
    secret = tmp_path / "secret.json"
    secret.write_text('{"const": "TOP-SECRET"}')
    with pytest.raises(SchemaUnusable) as caught:
        schema_errors(validator({"$ref": secret.as_uri()}), "guess")
    assert "TOP-SECRET" not in caught.value.message
    assert caught.value.message.startswith(f"{secret.as_uri()!r} {NOT_INSIDE}")


@pytest.mark.parametrize(
    ("schema", "field"),
    [({"$ref": "#"}, "$ref"), (A_TO_B_TO_A, "$defs.a.$ref"), ({"type": {"a": 1}}, "type")],
)
def test_applying_a_stored_schema_that_cannot_work_is_schema_unusable_never_a_crash(schema, field):
    with pytest.raises(SchemaUnusable) as caught:
        schema_errors(validator(schema), {"x": 1}, first_only=True)
    assert caught.value.problem.field == field
