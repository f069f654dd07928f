"""Sign-in and sign-out: JSON only, CSRF on sign-out, lockout after repeated failures, bad input."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from kernel.models import SignInFailure, token_issue

pytestmark = pytest.mark.django_db

URL = "/v1/auth/session"


def csrf_client() -> APIClient:
    return APIClient(enforce_csrf_checks=True)


def sign_in(client: APIClient, username: str, password: str):
    return client.post(URL, {"username": username, "password": password}, format="json")


def signed_in_as(client: APIClient) -> str | None:
    res = client.get(URL)
    return res.json()["username"] if res.status_code == 200 else None


@pytest.mark.parametrize("fmt", ["multipart", "urlencoded"])
def test_sign_in_from_a_form_is_415_and_signs_nobody_in(alice, fmt):
    client = csrf_client()
    if fmt == "multipart":
        res = client.post(URL, {"username": "alice", "password": "pw-alice"}, format="multipart")
    else:
        res = client.post(
            URL,
            "username=alice&password=pw-alice",
            content_type="application/x-www-form-urlencoded",
        )
    assert res.status_code == 415
    assert res.json()["error"] == "unsupported_media_type"
    assert "sessionid" not in res.cookies
    assert signed_in_as(client) is None
    assert SignInFailure.objects.count() == 0


def test_sign_out_without_the_csrf_token_is_403_and_the_session_stays(alice):
    client = csrf_client()
    token = sign_in(client, "alice", "pw-alice").json()["csrfToken"]
    res = client.delete(URL)
    assert res.status_code == 403
    assert res.json() == {
        "error": "permission_denied",
        "message": "CSRF Failed: CSRF token missing.",
    }
    assert signed_in_as(client) == "alice"
    assert client.delete(URL, HTTP_X_CSRFTOKEN=token).status_code == 204
    assert signed_in_as(client) is None


def test_sign_out_with_a_token_or_nothing_is_a_harmless_204(alice):
    _, raw = token_issue(user=alice, scopes=["data:read"])
    assert csrf_client().delete(URL, HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 204
    assert csrf_client().delete(URL).status_code == 204


NUL = "contains a NUL character (U+0000), which text cannot hold"
SURROGATE = "contains a lone surrogate (U+{}), which is not valid Unicode"


@pytest.mark.parametrize(
    ("body", "field", "code", "message"),
    [
        (
            {"username": "ali\x00ce", "password": "pw"},
            "username",
            "INVALID_TEXT",
            f"the value of username {NUL}",
        ),
        (
            {"username": "alice", "password": "p\x00w"},
            "password",
            "INVALID_TEXT",
            f"the value of password {NUL}",
        ),
        (
            {"username": "\ud800", "password": "pw"},
            "username",
            "INVALID_TEXT",
            f"the value of username {SURROGATE.format('D800')}",
        ),
        (
            {"username": "alice", "password": "\udfff"},
            "password",
            "INVALID_TEXT",
            f"the value of password {SURROGATE.format('DFFF')}",
        ),
        (
            {"username": "a" * 151, "password": "pw"},
            "username",
            "INVALID",
            "username is longer than 150 characters",
        ),
        ({"username": 7, "password": "pw"}, "username", "INVALID", "username is required"),
        (["alice", "pw"], "username", "INVALID", "username is required"),
    ],
)
def test_bad_credentials_input_is_400_naming_the_field(alice, body, field, code, message):
    # json.dumps escapes a lone surrogate as \ud800, as a client's JSON would carry it.
    res = csrf_client().post(URL, json.dumps(body), content_type="application/json")
    assert res.status_code == 400, res.content
    assert res.json() == {
        "error": "invalid_request",
        "rejection": {"code": code, "field": field, "message": message},
    }
    assert "sessionid" not in res.cookies
    assert SignInFailure.objects.count() == 0


def test_ten_failures_lock_the_username_with_retry_after_even_for_the_right_password(alice, bob):
    client = csrf_client()
    for _ in range(10):
        assert sign_in(client, "alice", "wrong").status_code == 401
    locked = sign_in(client, "alice", "pw-alice")
    assert locked.status_code == 429
    assert locked.json() == {"error": "too_many_attempts", "message": locked.json()["message"]}
    assert locked.json()["message"].startswith(
        "too many failed sign-ins for this username; try again in "
    )
    assert 890 <= int(locked["Retry-After"]) <= 900
    assert signed_in_as(client) is None
    row = SignInFailure.objects.get(username="alice")
    assert (row.username, row.address, row.failures) == ("alice", "127.0.0.1", 10)
    # Another username is not held up by alice's lock.
    assert sign_in(csrf_client(), "bob", "pw-bob").status_code == 200


def test_nine_failures_then_the_right_password_signs_in_and_resets_the_count(alice):
    client = csrf_client()
    for _ in range(9):
        sign_in(client, "alice", "wrong")
    assert SignInFailure.objects.get(username="alice").failures == 9
    assert sign_in(client, "alice", "pw-alice").status_code == 200
    assert not SignInFailure.objects.filter(username="alice").exists()
    # The address's own count (across usernames) is not reset by one account's right password.
    assert SignInFailure.objects.get(username="").failures == 9


def test_unknown_usernames_are_counted_and_locked_the_same_way(db):
    for _ in range(10):
        assert sign_in(csrf_client(), "nobody", "x").status_code == 401
    res = sign_in(csrf_client(), "nobody", "x")
    assert res.status_code == 429
    assert res.json()["error"] == "too_many_attempts"


def test_the_lock_ends_after_its_window_and_stale_failures_are_forgotten(alice, settings):
    settings.TURBOBASE_SIGN_IN_MAX_FAILURES = 3
    client = csrf_client()
    for _ in range(3):
        sign_in(client, "alice", "wrong")
    assert sign_in(client, "alice", "pw-alice").status_code == 429
    # Fifteen minutes on: the lock has run out.
    past = timezone.now() - timedelta(seconds=901)
    SignInFailure.objects.update(first_failed_at=past, locked_until=past)
    assert sign_in(client, "alice", "wrong").status_code == 401
    assert SignInFailure.objects.get(username="alice").failures == 1  # a fresh window
    assert sign_in(client, "alice", "pw-alice").status_code == 200


def test_failures_spread_over_more_than_the_window_do_not_lock(alice, settings):
    settings.TURBOBASE_SIGN_IN_MAX_FAILURES = 3
    client = csrf_client()
    sign_in(client, "alice", "wrong")
    sign_in(client, "alice", "wrong")
    SignInFailure.objects.update(first_failed_at=timezone.now() - timedelta(seconds=901))
    assert sign_in(client, "alice", "wrong").status_code == 401
    assert sign_in(client, "alice", "pw-alice").status_code == 200
