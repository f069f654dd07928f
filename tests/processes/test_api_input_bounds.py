"""Process input and run ids that used to be 500s: nothing is queued, the answer names the field."""

from __future__ import annotations

import json

import pytest

from processes.models import ProcessRun

pytestmark = pytest.mark.django_db

URL = "/v1/processes/acme:two-notes"


def post_raw(api, url: str, body: str):
    return api.post(
        url, data=body.encode("utf-8", "surrogatepass"), content_type="application/json"
    )


def test_an_input_nested_1000_deep_is_400_invalid_json(alice_api, two_notes):
    res = post_raw(alice_api, URL, '{"memo": ' + "[" * 1000 + "]" * 1000 + "}")
    assert res.status_code == 400, res.content
    assert res.json() == {
        "error": "invalid_request",
        "rejection": {
            "code": "INVALID_JSON",
            "field": None,
            "message": "JSON parse error - the body is nested deeper than 64 levels",
        },
    }
    assert ProcessRun.objects.count() == 0


@pytest.mark.parametrize(
    ("char", "problem"),
    [
        ("\x00", "contains a NUL character (U+0000), which text cannot hold"),
        ("\udc80", "contains a lone surrogate (U+DC80), which is not valid Unicode"),
    ],
)
def test_unstorable_text_in_the_input_is_400_naming_the_field(alice_api, two_notes, char, problem):
    res = post_raw(alice_api, URL, json.dumps({"memo": f"a{char}b"}))
    assert res.status_code == 400, res.content
    assert res.json() == {
        "error": "invalid_request",
        "rejection": {
            "code": "INVALID_TEXT",
            "field": "memo",
            "message": f"the value of memo {problem}",
        },
    }
    assert ProcessRun.objects.count() == 0


@pytest.mark.parametrize(
    "run_id", ["junk", "%ED%A0%80", "12345678-1234-1234-1234-1234567890ab", "a" * 300]
)
def test_a_junk_run_id_is_404_on_every_run_route(alice_api, run_id):
    res = alice_api.get(f"/v1/processes/runs/{run_id}")
    assert res.status_code == 404, res.content
    assert res.json()["error"] == "process_run_not_found"
    for verb in ("cancel", "rollback", "resume"):
        res = alice_api.post(f"/v1/processes/runs/{run_id}/{verb}")
        assert res.status_code == 404, (verb, res.content)


def test_a_nul_in_a_run_id_is_400_naming_the_path(alice_api):
    res = alice_api.get("/v1/processes/runs/%00")
    assert res.status_code == 400
    assert res.json()["rejection"] == {
        "code": "INVALID_TEXT",
        "field": "path",
        "message": "the path contains a NUL character (U+0000), which text cannot hold",
    }


def test_a_date_bound_with_an_offset_postgresql_cannot_read_is_compared_in_utc(
    alice_api, two_notes
):
    assert alice_api.post(URL, {"memo": "m"}, format="json").status_code == 202
    # +21:29 is a valid ISO 8601 offset to Python and past PostgreSQL's ±15:59 (was a 500).
    res = alice_api.get("/v1/processes/queue?createdBefore=1857-08-25T18:28:19.81%2B21:29")
    assert res.status_code == 200, res.content
    assert res.json()["runs"] == []
    res = alice_api.get("/v1/processes/queue?createdAfter=1857-08-25T18:28:19.81%2B21:29")
    assert res.status_code == 200, res.content
    assert [run["processId"] for run in res.json()["runs"]] == ["acme:two-notes"]
