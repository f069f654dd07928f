"""Access tokens in the admin: listed with their prefix, never their value; revoked by an action."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from kernel.models import AccessToken, token_issue

pytestmark = pytest.mark.django_db


def admin_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_token_list_shows_prefix_not_value(admin_user, alice):
    token, raw = token_issue(user=alice, scopes=["data:read"], name="laptop")
    page = admin_client(admin_user).get("/admin/kernel/accesstoken/")
    assert page.status_code == 200
    html = page.content.decode()
    assert token.prefix in html and "laptop" in html
    assert raw not in html
    detail = admin_client(admin_user).get(f"/admin/kernel/accesstoken/{token.pk}/change/")
    assert detail.status_code == 200
    assert raw not in detail.content.decode()


def test_tokens_are_not_added_in_the_admin(admin_user):
    assert admin_client(admin_user).get("/admin/kernel/accesstoken/add/").status_code == 403


def test_revoke_action_makes_the_token_401(admin_user, alice):
    token, raw = token_issue(user=alice, scopes=["data:read"])
    res = admin_client(admin_user).post(
        "/admin/kernel/accesstoken/",
        {"action": "revoke_selected", "_selected_action": [str(token.pk)]},
        follow=True,
    )
    assert res.status_code == 200
    assert "1 token(s) revoked" in res.content.decode()
    assert AccessToken.objects.get(pk=token.pk).revoked_at is not None
    assert (
        APIClient().get("/v1/auth/session", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 401
    )
