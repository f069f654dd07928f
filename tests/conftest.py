"""Shared fixtures: users made through the same command path operators use, and API clients."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from rest_framework.test import APIClient

from records.catalog import catalog_reset
from records.trail import Actor


@pytest.fixture(autouse=True)
def _fresh_catalog():
    from guardrails.rules import _rules
    from guardrails.settings import _rows

    for reset in (catalog_reset, _rows.clear, _rules.clear):
        reset()
    yield
    for reset in (catalog_reset, _rows.clear, _rules.clear):
        reset()


def make_user(username: str, *, admin: bool = False, groups: tuple[str, ...] = ()):
    from django.contrib.auth.models import Group

    user = get_user_model().objects.create_user(username=username, password="pw-" + username)
    user.is_staff = user.is_superuser = admin
    user.save()
    for name in groups:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    return user


@pytest.fixture
def alice(db):
    return make_user("alice")


@pytest.fixture
def bob(db):
    return make_user("bob")


@pytest.fixture
def admin_user(db):
    return make_user("root", admin=True)


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=user)
    return client


@pytest.fixture
def alice_api(alice) -> APIClient:
    return client_for(alice)


@pytest.fixture
def bob_api(bob) -> APIClient:
    return client_for(bob)


@pytest.fixture
def admin_api(admin_user) -> APIClient:
    return client_for(admin_user)


@pytest.fixture
def alice_actor(alice) -> Actor:
    return Actor(user=alice)


def is_postgres() -> bool:
    return connection.vendor == "postgresql"


