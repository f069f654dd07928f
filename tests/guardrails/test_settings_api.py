"""``/v1/settings``: every instance setting, changed by administrators, every bad value refused."""

from __future__ import annotations

import pytest

from guardrails.models import InstanceSetting
from guardrails.registry import REGISTRY
from guardrails.settings import setting_get, setting_set
from kernel.audit import AuditEvent
from kernel.models import token_issue
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def _by_key(body: dict) -> dict[str, dict]:
    return {row["key"]: row for row in body["settings"]}


def test_get_lists_every_setting_with_its_declaration(admin_api):
    res = admin_api.get("/v1/settings")
    assert res.status_code == 200
    rows = _by_key(res.json())
    # The fixed settings, and each per-source one for the catalog's source (guardrails.patterns).
    per_source = {"sources.netsuite.max_per_second", "sources.netsuite.max_in_flight"}
    assert set(rows) == set(REGISTRY) | per_source
    assert rows["processes.slice_max_rows"] == {
        "key": "processes.slice_max_rows",
        "value": 500,
        "default": 500,
        "type": "integer",
        "min": 1,
        "max": 2147483647,
        "group": "slices",
        "description": "Rows one migration slice works through before it queues the next.",
        "changedAt": None,
        "changedBy": None,
    }
    assert rows["processes.enabled"]["value"] is True
    assert rows["processes.enabled"]["type"] == "boolean"


def test_patch_sets_and_null_restores_the_default_and_every_change_is_kept(admin_api, admin_user):
    res = admin_api.patch(
        "/v1/settings", {"processes.slice_max_rows": 50, "processes.enabled": False}, format="json"
    )
    assert res.status_code == 200
    rows = _by_key(res.json())
    assert (rows["processes.slice_max_rows"]["value"], rows["processes.enabled"]["value"]) == (
        50,
        False,
    )
    assert rows["processes.slice_max_rows"]["changedBy"] == admin_user.username
    assert rows["processes.slice_max_rows"]["changedAt"] is not None
    assert setting_get("processes.slice_max_rows") == 50

    res = admin_api.patch("/v1/settings", {"processes.slice_max_rows": None}, format="json")
    assert _by_key(res.json())["processes.slice_max_rows"]["value"] == 500
    assert list(InstanceSetting.objects.values_list("key", "value")) == [("processes.enabled", 0)]
    trail = list(
        AuditEvent.objects.order_by("id").values_list(
            "actor_name", "action", "target", "before", "after"
        )
    )
    assert sorted(trail[:2]) == [
        ("root", "setting.changed", "processes.enabled", None, 0),
        ("root", "setting.changed", "processes.slice_max_rows", None, 50),
    ]
    assert trail[2] == ("root", "setting.changed", "processes.slice_max_rows", 50, None)


@pytest.mark.parametrize(
    "body, key, message",
    [
        ({"processes.slice_max_rows": "5e"}, "processes.slice_max_rows", "must be a whole number"),
        (
            {"processes.slice_max_rows": 0},
            "processes.slice_max_rows",
            "must be between 1 and 2147483647",
        ),
        (
            {"processes.slice_max_rows": 10, "processes.slice_cap": -1},
            "processes.slice_cap",
            "must be between",
        ),
        ({"processes.enabled": "perhaps"}, "processes.enabled", "must be true or false"),
        (
            {"guardrails.max_everything": 1},
            "guardrails.max_everything",
            "is not an instance setting",
        ),
        ({"processes.slice_max_rows": [1]}, "processes.slice_max_rows", "must be a whole number"),
        ([], "body", "must be a JSON object"),
        ({}, "body", "must be a JSON object"),
    ],
)
def test_a_bad_value_is_refused_naming_the_key_and_nothing_changes(admin_api, body, key, message):
    res = admin_api.patch("/v1/settings", body, format="json")
    assert res.status_code == 400
    assert res.json()["error"] == "invalid_setting"
    assert res.json()["rejection"]["field"] == key
    assert message in res.json()["rejection"]["message"]
    assert not InstanceSetting.objects.exists()
    assert not AuditEvent.objects.exists()


WRONG_TYPES = [
    # An integer setting takes a JSON integer: not text, not a boolean, not a point number.
    (
        "processes.slice_max_rows",
        "10",
        "must be a whole number (a JSON integer), not the text '10'",
    ),
    (
        "processes.slice_max_rows",
        "1_0",
        "must be a whole number (a JSON integer), not the text '1_0'",
    ),
    ("processes.slice_max_rows", True, "must be a whole number (a JSON integer), not true"),
    ("processes.slice_max_rows", 10.0, "must be a whole number (a JSON integer), not 10.0"),
    ("processes.slice_max_rows", 1.5, "must be a whole number (a JSON integer), not 1.5"),
    (
        "processes.slice_max_rows",
        {"n": 1},
        "must be a whole number (a JSON integer), not an object",
    ),
    (
        "processes.slice_max_ms",
        "600000",
        "must be a whole number (a JSON integer), not the text '600000'",
    ),
    (
        "processes.query_max_bytes",
        "1,024",
        "must be a whole number (a JSON integer), not the text '1,024'",
    ),
    # A boolean setting takes true or false: not text, not 0 or 1.
    ("processes.enabled", "off", "must be true or false, not the text 'off'"),
    ("processes.enabled", "false", "must be true or false, not the text 'false'"),
    ("processes.enabled", 0, "must be true or false, not 0"),
    ("processes.enabled", 1, "must be true or false, not 1"),
    ("processes.enabled", 1.0, "must be true or false, not 1.0"),
    ("processes.enabled", [], "must be true or false, not a list"),
]


@pytest.mark.parametrize("key, value, reason", WRONG_TYPES)
def test_a_value_of_the_wrong_json_type_is_refused_never_converted(admin_api, key, value, reason):
    setting_set("guardrails.max_deletes_per_min", 7)
    # A good change beside the bad one: the PATCH is all or nothing.
    body = {"guardrails.max_deletes_per_min": 8, key: value}
    res = admin_api.patch("/v1/settings", body, format="json")
    assert res.status_code == 400
    assert res.json() == {
        "error": "invalid_setting",
        "rejection": {"code": "INVALID_SETTING", "field": key, "message": f"{key} {reason}"},
        "key": key,
    }
    assert dict(InstanceSetting.objects.values_list("key", "value")) == {
        "guardrails.max_deletes_per_min": 7
    }
    assert not AuditEvent.objects.filter(actor_name="root").exists()
    assert setting_get("guardrails.max_deletes_per_min") == 7


def test_a_form_encoded_patch_is_text_and_refused(admin_api):
    res = admin_api.patch(
        "/v1/settings",
        "processes.slice_max_rows=10",
        content_type="application/x-www-form-urlencoded",
    )
    assert res.status_code == 400
    assert res.json()["rejection"] == {
        "code": "INVALID_SETTING",
        "field": "processes.slice_max_rows",
        "message": "processes.slice_max_rows must be a whole number (a JSON integer), "
        "not the text '10'",
    }
    assert not InstanceSetting.objects.exists()


def test_a_non_administrator_is_refused(alice_api):
    assert alice_api.get("/v1/settings").status_code == 403
    res = alice_api.patch("/v1/settings", {"processes.slice_max_rows": 5}, format="json")
    assert res.status_code == 403
    assert not InstanceSetting.objects.exists()


def test_tokens_need_data_read_to_read_and_deploy_to_change(admin_user):
    from rest_framework.test import APIClient

    _, reader = token_issue(user=admin_user, scopes=["data:read"])
    client = APIClient(HTTP_AUTHORIZATION=f"Bearer {reader}")
    assert client.get("/v1/settings").status_code == 200
    res = client.patch("/v1/settings", {"processes.slice_max_rows": 5}, format="json")
    assert res.status_code == 403
    assert res.json()["scope"] == "extensions:deploy"
    assert not InstanceSetting.objects.exists()
    assert client_for(admin_user).get("/v1/settings").status_code == 200


def test_the_hook_budget_and_the_read_caps_are_settings_the_instance_reads(admin_api, alice_api):
    from records.extension_hooks import hook_limits

    res = admin_api.patch(
        "/v1/settings",
        {"extensions.hook_cpu_ms": 250, "rest.max_response_bytes": 1, "batch.max_reads": 1},
        format="json",
    )
    assert res.status_code == 200
    assert hook_limits().call_budget_ms == 250
    made = alice_api.post("/v1/data/legacy_customer", {"parent": {"id": "L1"}}, format="json")
    assert made.status_code == 201, made.content
    read = alice_api.get("/v1/rest/legacy_customer")
    assert read.status_code == 413
    assert "(rest.max_response_bytes)" in read.json()["rejection"]["message"]
    batch = alice_api.post("/v1/batch", {"reads": ["customer", "invoice"]}, format="json")
    assert (batch.status_code, batch.json()["rejection"]["field"]) == (400, "reads")
