"""``handler500``: what escapes the views and middleware still answers the API's way."""

from __future__ import annotations

import json

import psycopg
import pytest
from django.db import OperationalError
from django.test import RequestFactory

from turbobase.unavailable import server_error


def _answer(path: str, exc: Exception):
    try:
        raise exc
    except Exception:  # Django calls handler500 inside its own except block, as here
        return server_error(RequestFactory().get(path))


def _unreachable() -> OperationalError:
    error = OperationalError("connection refused")
    error.__cause__ = psycopg.OperationalError("connection refused")
    return error


@pytest.mark.parametrize("path", ["/v1/rest/customer", "/admin/", "/"])
def test_an_unreachable_database_past_the_views_is_a_retryable_json_503(path):
    res = _answer(path, _unreachable())
    assert res.status_code == 503
    assert res["Retry-After"] == "5"
    assert json.loads(res.content)["error"] == "database_unavailable"


def test_any_other_failure_on_the_api_is_a_json_500():
    res = _answer("/v1/data/customer", RuntimeError("boom"))
    assert res.status_code == 500
    assert json.loads(res.content) == {
        "error": "server_error",
        "message": "the instance failed; it was logged",
    }


def test_a_page_keeps_djangos_own_500(settings):
    settings.TEMPLATES[0]["OPTIONS"]["debug"] = False
    res = _answer("/admin/", RuntimeError("boom"))
    assert res.status_code == 500
    assert res["Content-Type"].startswith("text/html")
