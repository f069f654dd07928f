"""``manage.py tb_user NAME --password P [--admin]``: create or update a user."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction


class Command(BaseCommand):
    help = "Create a user, or update an existing one's password and administrator flag."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="username")
        parser.add_argument("--password", required=True, help="the user's password")
        parser.add_argument(
            "--admin",
            action="store_true",
            help="make the user an administrator (is_staff and is_superuser); without it, a plain user",
        )
        parser.add_argument("--email", default="", help="optional e-mail address")

    def handle(self, *args, name: str, password: str, admin: bool, email: str, **options) -> None:
        if not name.strip():
            raise CommandError("NAME must not be empty")
        if not password:
            raise CommandError("--password must not be empty")
        User = get_user_model()
        with transaction.atomic():
            lookup: dict[str, Any] = {User.USERNAME_FIELD: name}
            user, created = User.objects.get_or_create(**lookup)
            user.set_password(password)
            # Without --admin the user is (or becomes) a plain user: the command states the whole role.
            user.is_staff = user.is_superuser = admin
            user.is_active = True
            if email:
                user.email = email
            user.save()
        role = "administrator" if admin else "user"
        self.stdout.write(f"{'created' if created else 'updated'} {role} {name}")
