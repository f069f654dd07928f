"""``manage.py tb_demo``: demo logins and a few demo records, so a fresh instance has something to show.

Safe to run on every start: users are created only when missing (an existing user's password is
left alone) and each record carries a demo idempotency key, so nothing is written twice.

Rooms add their own demo data without touching this command: a ``<room>/demo.py`` that defines
``demo_load(*, admin, user, write)`` is found and called after the users and records exist.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from records.boundary import record_create
from records.models import Record
from records.trail import Actor

# (username, password, is_admin): printed by make run, so a new user can sign in at once.
DEMO_LOGINS: tuple[tuple[str, str, bool], ...] = (("admin", "admin", True), ("demo", "demo", False))

# (idempotency key, record type, parent, lines): app-owned rows stay here; connected rows are queued
# for the sandbox source and confirmed by the workers.
DEMO_RECORDS: tuple[tuple[str, str, dict[str, Any], list[dict[str, Any]] | None], ...] = (
    (
        "demo:legacy_customer:1",
        "legacy_customer",
        {"id": "L-100", "company_name": "Acme Wholesale", "legacy_id": "L-100"},
        None,
    ),
    (
        "demo:legacy_customer:2",
        "legacy_customer",
        {"id": "L-101", "company_name": "Globex Retail", "legacy_id": "L-101"},
        None,
    ),
    (
        "demo:migration_item:1",
        "migration_item",
        {"legacy_id": "L-100", "company_name": "Acme Wholesale"},
        None,
    ),
    ("demo:customer:1", "customer", {"company_name": "Initech"}, None),
    (
        "demo:purchaseOrder:1",
        "purchaseOrder",
        {"entity_id": "V-1001", "memo": "demo order"},
        [{"item": "widget", "quantity": 10, "rate": 2.5}],
    ),
)


def demo_logins_ensure(*, write: Callable[[str], Any]) -> dict[str, Any]:
    """Create the demo users that do not exist yet; return them by username."""
    User = get_user_model()
    users = {}
    for username, password, is_admin in DEMO_LOGINS:
        user = User.objects.filter(**{User.USERNAME_FIELD: username}).first()
        if user is None:
            user = User.objects.create_user(**{User.USERNAME_FIELD: username}, password=password)
            user.is_staff = user.is_superuser = is_admin
            user.save()
            write(
                f"demo {'administrator' if is_admin else 'user'} created: {username} / {password}"
            )
        users[username] = user
    return users


def demo_records_load(*, user: Any, write: Callable[[str], Any]) -> int:
    """Create the demo records through the write boundary; return how many were new."""
    actor = Actor(user=user)
    created = 0
    for key, record_type, parent, lines in DEMO_RECORDS:
        if Record.reads.filter(idempotency_key=key).exists():
            continue
        result = record_create(
            actor=actor,
            record_type=record_type,
            parent=dict(parent),
            lines=lines,
            idempotency_key=key,
        )
        created += result.is_new
    if created:
        write(f"demo records created: {created}")
    return created


def demo_rooms_load(*, admin: Any, user: Any, write: Callable[[str], Any]) -> list[str]:
    """Call every installed room's ``demo.demo_load``; return the rooms that had one."""
    loaded = []
    for config in apps.get_app_configs():
        # Only the project's own rooms (top-level folders), never an installed package's ``demo``.
        if Path(config.path).parent != Path(settings.BASE_DIR):
            continue
        module_name = f"{config.name}.demo"
        if importlib.util.find_spec(module_name) is None:
            continue
        module = importlib.import_module(module_name)
        loader = getattr(module, "demo_load", None)
        if callable(loader):
            loader(admin=admin, user=user, write=write)
            loaded.append(config.name)
    return loaded


class Command(BaseCommand):
    help = "Load demo logins (admin/admin, demo/demo) and demo records when they are missing."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-records", action="store_true", help="only the demo logins")

    def handle(self, *args, no_records: bool, **options) -> None:
        write = self.stdout.write
        with transaction.atomic():
            users = demo_logins_ensure(write=write)
        if not no_records:
            # Each record commits on its own, as an app's write would, so its outbound send is queued.
            demo_records_load(user=users["demo"], write=write)
            demo_rooms_load(admin=users["admin"], user=users["demo"], write=write)
        write("demo data ready")
