"""Auth: session sign-in with CSRF, bearer tokens, and 401 without credentials."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from kernel.models import AccessToken, token_issue, token_revoke
from kernel.scopes import ScopeMissing, scope_check
from records.models import Record
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def csrf_client() -> APIClient:
    return APIClient(enforce_csrf_checks=True)


def sign_in(client: APIClient, username: str, password: str):
    return client.post(
        "/v1/auth/session", {"username": username, "password": password}, format="json"
    )


def test_session_sign_in_answers_the_csrf_token(alice):
    client = csrf_client()
    res = sign_in(client, "alice", "pw-alice")
    assert res.status_code == 200, res.content
    body = res.json()
    assert set(body) == {"username", "isAdmin", "csrfToken"}
    assert (body["username"], body["isAdmin"]) == ("alice", False)
    assert len(body["csrfToken"]) == 64
    assert "sessionid" in res.cookies and "csrftoken" in res.cookies


def test_session_sign_in_for_an_administrator_says_so(admin_user):
    res = sign_in(csrf_client(), "root", "pw-root")
    assert res.status_code == 200
    assert res.json()["isAdmin"] is True


def test_unsafe_request_without_csrf_header_is_403_and_writes_nothing(alice):
    client = csrf_client()
    assert sign_in(client, "alice", "pw-alice").status_code == 200
    res = client.post("/v1/data/legacy_customer", {"parent": {"company_name": "A"}}, format="json")
    assert res.status_code == 403
    assert res.json() == {
        "error": "permission_denied",
        "message": "CSRF Failed: CSRF token missing.",
    }
    assert Record.reads.count() == 0


def test_unsafe_request_with_the_answered_csrf_token_is_201(alice):
    client = csrf_client()
    token = sign_in(client, "alice", "pw-alice").json()["csrfToken"]
    res = client.post(
        "/v1/data/legacy_customer",
        {"parent": {"company_name": "A"}},
        format="json",
        HTTP_X_CSRFTOKEN=token,
    )
    assert res.status_code == 201, res.content
    record = Record.reads.get(pk=res.json()["pgRowId"])
    assert (record.owner_id, record.fields) == (alice.pk, {"company_name": "A"})


def test_wrong_csrf_token_is_403(alice):
    client = csrf_client()
    assert sign_in(client, "alice", "pw-alice").status_code == 200
    res = client.post(
        "/v1/data/legacy_customer",
        {"parent": {"company_name": "A"}},
        format="json",
        HTTP_X_CSRFTOKEN="x" * 64,
    )
    assert res.status_code == 403
    assert res.json()["error"] == "permission_denied"
    assert Record.reads.count() == 0


def test_wrong_password_is_401_and_no_session(alice):
    client = csrf_client()
    res = sign_in(client, "alice", "nope")
    assert res.status_code == 401
    assert res.json() == {"error": "invalid_credentials", "message": "Wrong username or password."}
    assert client.get("/v1/auth/session").status_code == 401


def test_sign_in_without_password_is_400(alice):
    res = csrf_client().post("/v1/auth/session", {"username": "alice"}, format="json")
    assert res.status_code == 400
    assert res.json() == {
        "error": "invalid_request",
        "rejection": {"code": "INVALID", "field": "password", "message": "password is required"},
    }


def test_session_get_says_who_and_sign_out_ends_it(alice):
    client = csrf_client()
    token = sign_in(client, "alice", "pw-alice").json()["csrfToken"]
    me = client.get("/v1/auth/session")
    assert me.status_code == 200
    assert {k: v for k, v in me.json().items() if k != "csrfToken"} == {
        "username": "alice",
        "isAdmin": False,
        "via": "session",
    }
    assert client.delete("/v1/auth/session", HTTP_X_CSRFTOKEN=token).status_code == 204
    after = client.get("/v1/auth/session")
    assert after.status_code == 401
    assert after.json()["error"] == "not_authenticated"


def test_no_credentials_is_401_not_authenticated(db):
    res = csrf_client().post(
        "/v1/data/legacy_customer", {"parent": {"company_name": "A"}}, format="json"
    )
    assert res.status_code == 401
    assert res.json() == {
        "error": "not_authenticated",
        "message": "Authentication credentials were not provided.",
    }
    assert res["WWW-Authenticate"] == "Bearer"
    assert Record.reads.count() == 0


def test_bearer_token_writes_as_its_owner_without_csrf(alice):
    _, raw = token_issue(user=alice, scopes=["data:write"])
    client = csrf_client()
    res = client.post(
        "/v1/data/legacy_customer",
        {"parent": {"company_name": "T"}},
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
    )
    assert res.status_code == 201, res.content
    assert Record.reads.get(pk=res.json()["pgRowId"]).owner_id == alice.pk
    assert AccessToken.objects.get().last_used_at is not None


def test_a_token_notes_its_use_at_most_once_a_minute(alice):
    token, raw = token_issue(user=alice, scopes=["data:read"])
    client = csrf_client()

    def whoami() -> list[str]:
        """The statements of one bearer request that write the token row."""
        with CaptureQueriesContext(connection) as queries:
            res = client.get("/v1/auth/session", HTTP_AUTHORIZATION=f"Bearer {raw}")
        assert res.status_code == 200, res.content
        return [q["sql"] for q in queries if q["sql"].startswith('UPDATE "access_token"')]

    assert len(whoami()) == 1  # never used: the first request notes it
    first = AccessToken.objects.get().last_used_at
    assert first is not None
    assert whoami() == []  # within the minute: a read does not write
    assert AccessToken.objects.get().last_used_at == first
    an_hour_ago = first - timedelta(hours=1)
    AccessToken.objects.filter(pk=token.pk).update(last_used_at=an_hour_ago)
    assert len(whoami()) == 1  # older than the minute: noted again
    assert AccessToken.objects.get().last_used_at > an_hour_ago


def test_bearer_token_whoami_lists_its_scopes(admin_user):
    _, raw = token_issue(user=admin_user, scopes=["extensions:deploy", "data:read"])
    res = csrf_client().get("/v1/auth/session", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert res.status_code == 200
    assert res.json() == {
        "username": "root",
        "isAdmin": True,
        "via": "token",
        "scopes": ["extensions:deploy", "data:read"],
    }


def test_token_is_hashed_at_rest(alice):
    token, raw = token_issue(user=alice, scopes=["data:read"], name="ci")
    stored = AccessToken.objects.get(pk=token.pk)
    assert raw.startswith("tbp_") and len(raw) > 40
    assert stored.token_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert raw not in (stored.token_hash, stored.prefix, stored.name)
    assert stored.prefix == raw[:10]


@pytest.mark.parametrize("header", ["Bearer tbp_unknown", "Bearer "])
def test_unknown_or_empty_token_is_401(alice, header):
    res = csrf_client().post(
        "/v1/data/legacy_customer",
        {"parent": {"company_name": "A"}},
        format="json",
        HTTP_AUTHORIZATION=header,
    )
    assert res.status_code == 401
    assert res.json()["error"] == "not_authenticated"
    assert Record.reads.count() == 0


def test_revoked_token_is_401(alice):
    token, raw = token_issue(user=alice, scopes=["data:write"])
    token_revoke(token=token)
    res = csrf_client().post(
        "/v1/data/legacy_customer",
        {"parent": {"company_name": "A"}},
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
    )
    assert res.status_code == 401
    assert res.json() == {"error": "not_authenticated", "message": "invalid or revoked token"}
    assert Record.reads.count() == 0


def test_token_of_an_inactive_user_is_401(alice):
    _, raw = token_issue(user=alice, scopes=["data:read"])
    alice.is_active = False
    alice.save()
    res = csrf_client().get("/v1/auth/session", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert res.status_code == 401


def test_malformed_bearer_header_is_401(alice):
    res = csrf_client().get("/v1/auth/session", HTTP_AUTHORIZATION="Bearer a b")
    assert res.status_code == 401
    assert res.json() == {
        "error": "not_authenticated",
        "message": "Authorization header must be 'Bearer <token>'",
    }


def test_scope_check_limits_tokens_not_sessions(db):
    owner = make_user("ops", admin=True)
    token, _ = token_issue(user=owner, scopes=["data:read"])
    scope_check(SimpleNamespace(auth=token), "data:read")
    scope_check(SimpleNamespace(auth=None), "extensions:deploy")  # a session carries every scope
    with pytest.raises(ScopeMissing) as refused:
        scope_check(SimpleNamespace(auth=token), "extensions:deploy")
    assert refused.value.http_status == 403
    assert refused.value.body() == {
        "error": "insufficient_scope",
        "scope": "extensions:deploy",
        "message": "this access token lacks the extensions:deploy scope",
    }
