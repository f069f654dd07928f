"""Under /v1/ every answer is JSON with an error code, Django's own 404 and 400 included."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_an_unknown_api_path_is_a_json_404(alice_api):
    res = alice_api.get("/v1/no-such-thing")
    assert res.status_code == 404
    assert res["Content-Type"] == "application/json"
    assert res.json() == {
        "error": "not_found",
        "message": "no API route '/v1/no-such-thing'; the routes are listed at /api/docs",
    }


def test_outside_the_api_a_404_stays_a_page():
    res = Client().get("/no-such-page")
    assert res.status_code == 404
    assert not res["Content-Type"].startswith("application/json")


def test_a_body_over_the_upload_limit_is_a_json_400_that_closes(alice_api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    res = alice_api.post(
        "/v1/data/legacy_customer", {"parent": {"note": "x" * 5000}}, format="json"
    )
    assert res.status_code == 400, res.content
    assert res["Content-Type"] == "application/json"
    assert res.json()["error"] == "bad_request"
    assert res["Connection"] == "close"
