"""``/v1/extensions``: who may deploy, the bodies it answers, list, remove and lint."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from extensions.errors import ExtensionInUse
from extensions.models import ExtensionModule, ExtensionVersion
from extensions.signals import extension_removing
from extensions.store import store_forget
from kernel.models import token_issue
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parent / "fixtures"
ENTRY = "processes/raise-po-and-bill.ts"


@pytest.fixture(autouse=True)
def _isolated() -> Iterator[None]:
    yield
    store_forget()


def bundle(entry: str = ENTRY) -> dict:
    return {"entry": entry, "files": {entry: (FIXTURES / entry).read_text(encoding="utf-8")}}


def bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def counts() -> tuple[int, int]:
    return ExtensionModule.objects.count(), ExtensionVersion.objects.count()


def test_admin_session_deploys_then_replaces(admin_api):
    first = admin_api.post("/v1/extensions", bundle(), format="json")
    assert first.status_code == 201, first.content
    assert first.json() == {
        "id": "acme:raise-po-and-bill",
        "kind": "process",
        "version": 1,
        "outcome": "written",
        "status": "active",
    }
    second = admin_api.post("/v1/extensions", bundle(), format="json")
    assert second.status_code == 201
    assert second.json() == {
        "id": "acme:raise-po-and-bill",
        "kind": "process",
        "version": 2,
        "outcome": "duplicate",
        "status": "active",
    }
    assert counts() == (1, 2)


def test_admin_token_with_the_deploy_scope_deploys(admin_user):
    _, raw = token_issue(user=admin_user, scopes=["extensions:deploy"])
    res = bearer(raw).post("/v1/extensions", bundle(), format="json")
    assert res.status_code == 201, res.content
    assert ExtensionVersion.objects.get().deployed_by == admin_user


def test_real_session_login_with_csrf_deploys(admin_user):
    client = APIClient(enforce_csrf_checks=True)
    login = client.post(
        "/v1/auth/session", {"username": "root", "password": "pw-root"}, format="json"
    )
    assert login.status_code == 200, login.content
    token = client.cookies["csrftoken"].value
    refused = client.post("/v1/extensions", bundle(), format="json")
    assert refused.status_code == 403
    res = client.post("/v1/extensions", bundle(), format="json", HTTP_X_CSRFTOKEN=token)
    assert res.status_code == 201, res.content


@pytest.mark.parametrize(
    "who, error",
    [
        ("non-admin session", "admin_required"),
        ("non-admin token", "admin_required"),
        ("admin token without scope", "insufficient_scope"),
    ],
)
def test_anyone_else_is_refused_and_nothing_stored(alice, alice_api, admin_user, who, error):
    if who == "non-admin session":
        client = alice_api
    elif who == "non-admin token":
        client = bearer(token_issue(user=alice, scopes=["extensions:deploy"])[1])
    else:
        client = bearer(token_issue(user=admin_user, scopes=["data:write"])[1])
    for res in (
        client.post("/v1/extensions", bundle(), format="json"),
        client.get("/v1/extensions"),
        client.post("/v1/extensions/lint", bundle(), format="json"),
        client.delete("/v1/extensions/acme:raise-po-and-bill"),
    ):
        assert res.status_code == 403, res.content
        assert res.json()["error"] == error
    assert counts() == (0, 0)


def test_no_credentials_is_401(client):
    res = client.post("/v1/extensions", bundle(), content_type="application/json")
    assert res.status_code == 401
    assert res.json()["error"] == "not_authenticated"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"files": {ENTRY: "x"}}, "entry"),
        ({"entry": ENTRY}, "files"),
        ({"entry": ENTRY, "files": {}}, "files"),
        ({"entry": ENTRY, "files": {ENTRY: 7}}, f"files.{ENTRY}"),
        ({"entry": ENTRY, "files": ["x"]}, "files"),
    ],
)
def test_malformed_body_is_refused_naming_the_field(admin_api, body, field):
    res = admin_api.post("/v1/extensions", body, format="json")
    assert res.status_code == 400, res.content
    assert res.json()["error"] == "invalid_extension"
    assert (res.json()["rejection"]["code"], res.json()["rejection"]["field"]) == (
        "EXTENSION_INVALID",
        field,
    )
    assert counts() == (0, 0)


def test_infinite_loop_in_a_deploy_is_the_sandbox_timeout(admin_api, settings):
    settings.EXTENSIONS_DEPLOY_CPU_MS = 300
    body = bundle()
    body["files"][ENTRY] += "\nfor (;;) {}\n"
    res = admin_api.post("/v1/extensions", body, format="json")
    assert res.status_code == 422, res.content
    body = res.json()
    assert (body["error"], body["rejection"]["code"], body["rejection"]["field"]) == (
        "invalid_extension",
        "sandbox_timeout",
        ENTRY,
    )
    assert body["rejection"]["message"].startswith("sandbox_timeout: CPU budget of 300 ms exceeded")
    assert counts() == (0, 0)
    # The web process is fine and the next deploy works.
    assert admin_api.post("/v1/extensions", bundle(), format="json").status_code == 201


def test_list_answers_the_served_versions(admin_api, admin_user):
    admin_api.post("/v1/extensions", bundle(), format="json")
    admin_api.post("/v1/extensions", bundle(), format="json")
    admin_api.post(
        "/v1/extensions",
        bundle("hooks/require-memo.ts")
        | {
            "files": {
                "hooks/require-memo.ts": (FIXTURES / "hooks/require-memo.ts").read_text(),
                "hooks/shared-rule.ts": (FIXTURES / "hooks/shared-rule.ts").read_text(),
            }
        },
        format="json",
    )
    res = admin_api.get("/v1/extensions")
    assert res.status_code == 200
    served = {
        v.module_id: v
        for v in ExtensionVersion.objects.filter(version__in=[1, 2])
        if (v.module_id, v.version) in {("acme:raise-po-and-bill", 2), ("acme:require-memo", 1)}
    }
    assert res.json() == {
        "extensions": [
            {
                "id": "acme:raise-po-and-bill",
                "kind": "process",
                "version": 2,
                "status": "active",
                "deployedBy": "root",
                "deployedAt": served["acme:raise-po-and-bill"].deployed_at.isoformat(),
                "sha256": served["acme:raise-po-and-bill"].sha256,
            },
            {
                "id": "acme:require-memo",
                "kind": "hook",
                "version": 1,
                "status": "active",
                "deployedBy": "root",
                "deployedAt": served["acme:require-memo"].deployed_at.isoformat(),
                "sha256": served["acme:require-memo"].sha256,
            },
        ]
    }


def test_delete_removes_and_a_second_delete_is_404(admin_api):
    admin_api.post("/v1/extensions", bundle(), format="json")
    res = admin_api.delete("/v1/extensions/acme:raise-po-and-bill")
    assert res.status_code == 200, res.content
    assert res.json() == {"id": "acme:raise-po-and-bill", "kind": "process", "status": "removed"}
    assert ExtensionModule.objects.get().status == "removed"
    again = admin_api.delete("/v1/extensions/acme:raise-po-and-bill")
    assert again.status_code == 404
    assert again.json() == {"error": "extension_not_found", "id": "acme:raise-po-and-bill"}
    listed = admin_api.get("/v1/extensions").json()["extensions"]
    assert [(e["id"], e["status"]) for e in listed] == [("acme:raise-po-and-bill", "removed")]


def test_delete_refused_by_a_removing_receiver_changes_nothing(admin_api):
    admin_api.post("/v1/extensions", bundle(), format="json")

    def refuse(sender, *, module_id, **kwargs):
        raise ExtensionInUse(f"schedule migrate-nightly still runs {module_id}", field="schedule")

    extension_removing.connect(refuse)
    try:
        res = admin_api.delete("/v1/extensions/acme:raise-po-and-bill")
    finally:
        extension_removing.disconnect(refuse)
    assert res.status_code == 409
    assert res.json() == {
        "error": "extension_in_use",
        "rejection": {
            "code": "EXTENSION_IN_USE",
            "field": "schedule",
            "message": "schedule migrate-nightly still runs acme:raise-po-and-bill",
        },
    }
    assert ExtensionModule.objects.get().status == "active"


def test_lint_answers_no_warnings_for_a_correct_process_and_stores_nothing(admin_api):
    res = admin_api.post("/v1/extensions/lint", bundle(), format="json")
    assert res.status_code == 200, res.content
    assert res.json() == {
        "entry": ENTRY,
        "kind": "process",
        "id": "acme:raise-po-and-bill",
        "warnings": [],
    }
    assert counts() == (0, 0)


def test_lint_warns_about_the_id_literal_trap(admin_api):
    body = bundle()
    body["files"][ENTRY] = body["files"][ENTRY].replace(
        "export default", "const stray = { id: 'acme:old-name' };\nexport default", 1
    )
    res = admin_api.post("/v1/extensions/lint", body, format="json")
    assert res.status_code == 200, res.content
    assert res.json()["warnings"] == [
        {
            "rule": "id-literal",
            "file": ENTRY,
            "message": "the first id: literal in the file is 'acme:old-name' but the module defines "
            "'acme:raise-po-and-bill'; the store keys the module on the first literal, so make it "
            "the extension's own id",
        }
    ]
    assert counts() == (0, 0)


def test_lint_refuses_an_npm_import_naming_it(admin_api):
    body = bundle()
    body["files"][ENTRY] = "import lodash from 'lodash';\n" + body["files"][ENTRY]
    res = admin_api.post("/v1/extensions/lint", body, format="json")
    assert res.status_code == 400
    assert (res.json()["rejection"]["code"], res.json()["rejection"]["field"]) == (
        "IMPORT_REFUSED",
        "lodash",
    )


def test_the_other_non_admin_cannot_remove(admin_api, bob_api):
    admin_api.post("/v1/extensions", bundle(), format="json")
    res = bob_api.delete("/v1/extensions/acme:raise-po-and-bill")
    assert res.status_code == 403
    assert ExtensionModule.objects.get().status == "active"


def test_token_of_a_deactivated_admin_is_401(db):
    owner = make_user("gone", admin=True)
    _, raw = token_issue(user=owner, scopes=["extensions:deploy"])
    owner.is_active = False
    owner.save()
    res = bearer(raw).post("/v1/extensions", bundle(), format="json")
    assert res.status_code == 401
