"""Shared fixtures: users made through the same command path operators use, API and admin clients,
the CLI run in-process; and the suite's tiers (``unit`` is every test that touches no database).
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import override_settings
from rest_framework.test import APIClient

from records.catalog import catalog_reset
from records.trail import Actor
from turbobase.cli.main import main

# Fixtures through which a test reaches the database (pytest-django's, directly or via another
# fixture such as ``alice``): a test with none of them and no django_db mark is a ``unit`` test.
_DATABASE_FIXTURES = frozenset(
    {
        "db",
        "transactional_db",
        "django_db_reset_sequences",
        "django_db_serialized_rollback",
        "live_server",
    }
)


def pytest_configure(config: pytest.Config) -> None:
    # Django's default PBKDF2 costs ~360 ms per user made; the suite makes hundreds. Set once here
    # (an override for the whole session), never per module. Passwords are test fixtures anyway.
    override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]).enable()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    unit = pytest.mark.unit
    for item in items:
        uses_database = item.get_closest_marker(
            "django_db"
        ) is not None or not _DATABASE_FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))
        # A PostgreSQL-only test reaches a server of its own (tb_prepare creates a database) even
        # without a Django fixture: never unit, so `make test-unit` touches no database.
        if not uses_database and not any(
            item.get_closest_marker(name) for name in ("workers", "postgres_only")
        ):
            item.add_marker(unit)


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


@pytest.fixture
def operator(admin_user) -> Client:
    """The admin site as a logged-in administrator sees it."""
    client = Client()
    client.force_login(admin_user)
    return client


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``turbobase *argv`` in this process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def is_postgres() -> bool:
    return connection.vendor == "postgresql"
