"""The sign-in lockout cannot be turned against a user: it counts per (client address, username)
and per client address, keeps a locked user's sessions and tokens, and an administrator unlocks."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from rest_framework.test import APIClient

from kernel.audit import AuditEvent
from kernel.models import SignInFailure, token_issue

pytestmark = pytest.mark.django_db

URL = "/v1/auth/session"
ATTACKER, USER = "198.51.100.66", "203.0.113.7"


def sign_in(username: str, password: str, address: str, client: APIClient | None = None, **meta):
    client = client or APIClient(enforce_csrf_checks=True)
    body = {"username": username, "password": password}
    return client.post(URL, body, format="json", REMOTE_ADDR=address, **meta)


def lock_out(username: str, address: str, times: int = 10) -> None:
    for _ in range(times):
        assert sign_in(username, "wrong", address).status_code == 401


def test_someone_elses_failures_do_not_lock_the_user_out_from_their_own_address(alice):
    lock_out("alice", ATTACKER)
    locked = sign_in("alice", "pw-alice", ATTACKER)
    assert locked.status_code == 429
    assert locked.json()["error"] == "too_many_attempts"
    assert 890 <= int(locked["Retry-After"]) <= 900
    # Alice, from her own address, signs in with her password.
    assert sign_in("alice", "pw-alice", USER).status_code == 200
    assert not SignInFailure.objects.filter(address=USER).exists()
    assert SignInFailure.objects.get(address=ATTACKER, username="alice").failures == 10


def test_one_client_trying_many_usernames_is_throttled_by_its_address(alice):
    for n in range(100):
        assert sign_in(f"user{n}", "guess", ATTACKER).status_code == 401
    res = sign_in("user100", "guess", ATTACKER)
    assert res.status_code == 429
    assert res.json() == {
        "error": "too_many_attempts",
        "message": res.json()["message"],
    }
    assert res.json()["message"].startswith(
        "too many failed sign-ins from this address; try again in "
    )
    assert 890 <= int(res["Retry-After"]) <= 900
    # Even a right password from that address waits; nothing more was counted.
    assert sign_in("alice", "pw-alice", ATTACKER).status_code == 429
    assert SignInFailure.objects.get(address=ATTACKER, username="").failures == 100
    assert not SignInFailure.objects.filter(username="user100").exists()
    # Other clients are not held up.
    assert sign_in("alice", "pw-alice", USER).status_code == 200


def test_the_address_cap_is_a_setting(alice, settings):
    settings.TURBOBASE_SIGN_IN_ADDRESS_MAX_FAILURES = 3
    settings.TURBOBASE_SIGN_IN_ADDRESS_WINDOW_S = 60
    for n in range(3):
        sign_in(f"user{n}", "guess", ATTACKER)
    res = sign_in("user9", "guess", ATTACKER)
    assert res.status_code == 429
    assert 50 <= int(res["Retry-After"]) <= 60


def test_a_locked_users_session_and_token_go_on_working(alice):
    client = APIClient(enforce_csrf_checks=True)
    assert sign_in("alice", "pw-alice", USER, client=client).status_code == 200
    _, raw = token_issue(user=alice, scopes=["data:read"])
    lock_out("alice", USER)  # from her own address, even
    assert sign_in("alice", "pw-alice", USER).status_code == 429
    assert client.get(URL).json()["username"] == "alice"
    assert client.get("/v1/rest/legacy_customer").status_code == 200
    token_client = APIClient()
    res = token_client.get(URL, HTTP_AUTHORIZATION=f"Bearer {raw}", REMOTE_ADDR=USER)
    assert (res.status_code, res.json()["username"]) == (200, "alice")
    res = token_client.get(
        "/v1/rest/legacy_customer", HTTP_AUTHORIZATION=f"Bearer {raw}", REMOTE_ADDR=USER
    )
    assert res.status_code == 200


def test_x_forwarded_for_is_ignored_unless_the_proxy_is_trusted(alice):
    # Without TURBOBASE_TRUSTED_PROXIES a made-up X-Forwarded-For buys no fresh count.
    for n in range(10):
        sign_in("alice", "wrong", ATTACKER, HTTP_X_FORWARDED_FOR=f"192.0.2.{n}")
    assert (
        sign_in("alice", "pw-alice", ATTACKER, HTTP_X_FORWARDED_FOR="192.0.2.99").status_code == 429
    )
    assert list(SignInFailure.objects.values_list("address", flat=True).distinct()) == [ATTACKER]


def test_behind_a_trusted_proxy_the_client_is_the_forwarded_address(alice, settings):
    settings.TURBOBASE_TRUSTED_PROXIES = ["10.0.0.0/8"]
    proxy = "10.1.2.3"
    for _ in range(10):
        # The client's own X-Forwarded-For entry (left) is not believed: the proxies' is.
        res = sign_in(
            "alice", "wrong", proxy, HTTP_X_FORWARDED_FOR=f"1.2.3.4, {ATTACKER}, 10.9.9.9"
        )
        assert res.status_code == 401
    assert set(SignInFailure.objects.values_list("address", flat=True)) == {ATTACKER}
    assert sign_in("alice", "pw-alice", proxy, HTTP_X_FORWARDED_FOR=ATTACKER).status_code == 429
    assert sign_in("alice", "pw-alice", proxy, HTTP_X_FORWARDED_FOR=USER).status_code == 200


def test_a_trusted_proxies_setting_that_is_not_an_address_says_so(alice, settings):
    settings.TURBOBASE_TRUSTED_PROXIES = ["proxy.example"]
    with pytest.raises(ImproperlyConfigured, match="'proxy.example' is not an IP address"):
        sign_in("alice", "pw-alice", USER)


def test_an_administrator_unlocks_from_the_admin_and_it_is_audited(alice, operator: Client):
    lock_out("alice", ATTACKER)
    assert sign_in("alice", "pw-alice", ATTACKER).status_code == 429
    page = operator.get("/admin/kernel/signinfailure/?q=alice")
    assert page.status_code == 200
    assert b"198.51.100.66" in page.content
    row = SignInFailure.objects.get(username="alice")
    res = operator.post(
        "/admin/kernel/signinfailure/",
        {"action": "unlock_selected", "_selected_action": [row.pk]},
    )
    assert res.status_code == 302
    assert not SignInFailure.objects.filter(username="alice").exists()
    # The address's own count stays: only the selected row was unlocked.
    assert SignInFailure.objects.get(username="").failures == 10
    event = AuditEvent.objects.get(action="sign_in.unlocked")
    assert (event.actor_name, event.target) == ("root", f"sign_in:alice@{ATTACKER}")
    assert (event.before["username"], event.before["address"], event.before["failures"]) == (
        "alice",
        ATTACKER,
        10,
    )
    assert event.before["lockedUntil"] is not None
    assert sign_in("alice", "pw-alice", ATTACKER).status_code == 200


def test_the_admin_cannot_delete_a_lockout_unaudited(alice, operator: Client):
    lock_out("alice", ATTACKER, times=1)
    row = SignInFailure.objects.get(username="alice")
    assert operator.get(f"/admin/kernel/signinfailure/{row.pk}/delete/").status_code == 403
    res = operator.post(
        "/admin/kernel/signinfailure/",
        {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"},
    )
    assert SignInFailure.objects.filter(username="alice").exists()
    assert not AuditEvent.objects.exists()
    assert res.status_code in (200, 302)


def test_the_admin_sign_in_counts_by_address_too(admin_user):
    lock_out("root", ATTACKER)
    form = {"username": "root", "password": "pw-root"}
    locked = Client(REMOTE_ADDR=ATTACKER).post("/admin/login/?next=/admin/", form)
    assert locked.status_code == 200
    assert b"too many failed sign-ins for this username" in locked.content
    assert Client(REMOTE_ADDR=USER).post("/admin/login/?next=/admin/", form).status_code == 302
