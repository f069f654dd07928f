"""No request body, path or query makes a 5xx: bounded JSON depth, no NUL or lone surrogate.

Every refusal here happens before a view reads the body or routes the path, so nothing is
written — no record, no trail row, no session.
"""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from kernel.input import JSON_MAX_DEPTH
from kernel.text import text_clean, text_problem, text_truncate
from records.models import Record, RecordWriteState, WriteTrail

pytestmark = pytest.mark.django_db


def post_raw(client: APIClient, url: str, body: str, **headers):
    return client.post(
        url, data=body.encode("utf-8", "surrogatepass"), content_type="application/json", **headers
    )


def nested(depth: int) -> str:
    """A JSON array nested ``depth`` levels deep: ``[[[]]]`` is 3."""
    return "[" * depth + "]" * depth


def deep_refusal(message: str) -> dict:
    return {
        "error": "invalid_request",
        "rejection": {"code": "INVALID_JSON", "field": None, "message": message},
    }


def text_refusal(field: str, message: str) -> dict:
    return {
        "error": "invalid_request",
        "rejection": {"code": "INVALID_TEXT", "field": field, "message": message},
    }


NUL = "contains a NUL character (U+0000), which text cannot hold"
SURROGATE = "contains a lone surrogate (U+D800), which is not valid Unicode"


def assert_nothing_written() -> None:
    assert Record.reads.count() == 0
    assert RecordWriteState.reads.count() == 0
    assert WriteTrail.reads.count() == 0


# --- depth -----------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["/v1/data/customer", "/v1/batch"])
def test_a_body_nested_1000_deep_is_400_invalid_json(alice_api, url):
    res = post_raw(alice_api, url, '{"parent": ' + nested(1000) + "}")
    assert res.status_code == 400, res.content
    assert res.json() == deep_refusal(
        f"JSON parse error - the body is nested deeper than {JSON_MAX_DEPTH} levels"
    )
    assert_nothing_written()


def test_the_depth_limit_is_exact(alice_api):
    # {"parent": {"company_name": "A", "custom": [[…]]}}: the object is level 1, parent level 2.
    at_limit = '{"parent": {"company_name": "A", "custom": ' + nested(JSON_MAX_DEPTH - 2) + "}}"
    res = post_raw(alice_api, "/v1/data/customer", at_limit)
    assert res.status_code == 201, res.content
    assert Record.reads.count() == 1

    past = '{"parent": {"company_name": "B", "custom": ' + nested(JSON_MAX_DEPTH - 1) + "}}"
    res = post_raw(alice_api, "/v1/data/customer", past)
    assert res.status_code == 400
    assert res.json() == deep_refusal(
        f"JSON parse error - the body is nested deeper than {JSON_MAX_DEPTH} levels"
    )
    assert Record.reads.count() == 1


@pytest.mark.parametrize("number", ["1e999", "-1e999"])
def test_a_number_decoding_to_infinity_is_400_naming_it(alice_api, number):
    res = post_raw(
        alice_api, "/v1/data/customer", '{"parent": {"company_name": "A", "n": ' + number + "}}"
    )
    assert res.status_code == 400, res.content
    assert res.json() == {
        "error": "invalid_request",
        "rejection": {
            "code": "INVALID_NUMBER",
            "field": "parent.n",
            "message": "parent.n is a number out of range (±1.8e308)",
        },
    }
    assert_nothing_written()


# --- NUL and lone surrogates in the body ------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field", "what", "problem"),
    [
        ('{"parent": {"company_name": "a\\u0000b"}}', "parent.company_name", "value", NUL),
        ('{"parent": {"company_name": "a\\ud800b"}}', "parent.company_name", "value", SURROGATE),
        (
            '{"parent": {"company_name": "A"}, "lines": [{"memo": "ok"}, {"memo": "\\u0000"}]}',
            "lines[1].memo",
            "value",
            NUL,
        ),
        (
            '{"parent": {"company_name": "A"}, "idempotencyKey": "k\\ud800"}',
            "idempotencyKey",
            "value",
            SURROGATE,
        ),
    ],
)
def test_unstorable_text_in_a_record_value_is_400_naming_the_field(
    alice_api, body, field, what, problem
):
    res = post_raw(alice_api, "/v1/data/customer", body)
    assert res.status_code == 400, res.content
    assert res.json() == text_refusal(field, f"the {what} of {field} {problem}")
    assert_nothing_written()


@pytest.mark.parametrize(("key", "problem"), [("k\x00", NUL), ("k\ud800", SURROGATE)])
def test_unstorable_text_in_a_record_key_is_400_naming_it(alice_api, key, problem):
    res = post_raw(
        alice_api, "/v1/data/customer", json.dumps({"parent": {"company_name": "A", key: 1}})
    )
    assert res.status_code == 400, res.content
    # The field is named with the bad character replaced, so the answer itself is valid text.
    assert res.json() == text_refusal("parent.k\ufffd", f"the key of parent.k\ufffd {problem}")
    assert_nothing_written()


def test_an_update_with_a_nul_changes_nothing(alice_api):
    created = alice_api.post("/v1/data/customer", {"parent": {"company_name": "A"}}, format="json")
    row_id = created.json()["pgRowId"]
    trail_before = WriteTrail.reads.count()
    res = alice_api.generic(
        "PATCH",
        "/v1/data/customer",
        json.dumps({"pgRowId": row_id, "parent": {"company_name": "\x00"}}),
        content_type="application/json",
    )
    assert res.status_code == 400
    assert res.json() == text_refusal(
        "parent.company_name", f"the value of parent.company_name {NUL}"
    )
    assert Record.reads.get().fields == {"company_name": "A"}
    assert WriteTrail.reads.count() == trail_before


def test_a_form_encoded_body_is_checked_too(alice_api):
    # Sign-in takes JSON only (415 for a form), so a route that still parses forms is used here.
    res = alice_api.post(
        "/v1/batch",
        "reads=a%00b",
        content_type="application/x-www-form-urlencoded",
    )
    assert res.status_code == 400, res.content
    assert res.json() == text_refusal("reads", f"the value of reads {NUL}")


@pytest.mark.parametrize(("username", "problem"), [("alice\x00", NUL), ("alice\ud800", SURROGATE)])
def test_sign_in_with_unstorable_text_in_the_username_is_400(alice, username, problem):
    client = APIClient()
    res = post_raw(
        client, "/v1/auth/session", json.dumps({"username": username, "password": "pw-alice"})
    )
    assert res.status_code == 400, res.content
    assert res.json() == text_refusal("username", f"the value of username {problem}")
    assert "sessionid" not in res.cookies


# --- path and query --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/v1/processes/runs/a%00b"),
        ("post", "/v1/processes/runs/a%00b/cancel"),
        ("post", "/v1/processes/acme%00x"),
        ("get", "/v1/held-deletes/%00"),
        ("get", "/admin/records/record/%00/change/"),
    ],
)
def test_a_nul_in_the_path_is_400_naming_the_path(admin_api, method, url):
    res = getattr(admin_api, method)(url)
    assert res.status_code == 400, res.content
    assert res.json() == text_refusal("path", f"the path {NUL}")


def test_a_nul_in_a_query_value_is_400_naming_the_parameter(alice_api):
    res = alice_api.get("/v1/processes/queue?mode=%00")
    assert res.status_code == 400
    assert res.json() == text_refusal("mode", f"the query parameter 'mode' value {NUL}")


# --- the text helpers ------------------------------------------------------------------------


def test_text_problem_names_nul_and_lone_surrogates_only():
    assert text_problem("plain, ünïcode and 😀 are fine") is None
    assert text_problem("a\x00") == NUL
    assert (
        text_problem("\udfff") == "contains a lone surrogate (U+DFFF), which is not valid Unicode"
    )


def test_text_truncate_marks_the_cut_and_stays_within_the_limit():
    assert text_truncate("short", 10) == "short"
    cut = text_truncate("x" * 15_000_000, 2_000)
    marker = "… [truncated 14998028 chars]"  # 28 characters: 1,972 kept, 14,998,028 left out
    assert cut == "x" * 1_972 + marker
    assert len(cut) == 2_000


def test_text_clean_replaces_what_cannot_be_stored():
    assert text_clean("a\x00b\ud800", 100) == "a\ufffdb\ufffd"
    assert text_clean(42, 100) == "42"
