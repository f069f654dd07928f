"""OpenAPI: the schema lists the API, and the docs page needs nothing from the internet."""
from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_schema_answers_with_the_data_paths():
    res = Client().get("/api/schema", {"format": "json"})
    assert res.status_code == 200
    schema = res.json()
    assert schema["info"]["title"] == "Turbobase API"
    data = schema["paths"]["/v1/data/{record_type}"]
    assert {"post", "patch", "delete"} <= set(data)
    assert "post" in schema["paths"]["/v1/data/{record_type}/settle"]
    assert "/v1/auth/session" in schema["paths"]


def test_docs_page_is_served_from_local_static_files():
    res = Client().get("/api/docs")
    assert res.status_code == 200
    page = res.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in page
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css" in page
    assert "https://" not in page and "//cdn" not in page  # offline: nothing fetched from elsewhere
    assert "/api/schema" in page
