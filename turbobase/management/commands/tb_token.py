"""``manage.py tb_token NAME --scope extensions:deploy``: issue a personal access token."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kernel.models import SCOPES, ScopeUnknown, token_issue


class Command(BaseCommand):
    help = (
        "Issue a personal access token for a user and print it once; only its hash is stored. "
        f"Scopes: {', '.join(SCOPES)}."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the username that owns the token")
        parser.add_argument(
            "--scope",
            action="append",
            dest="scopes",
            default=[],
            metavar="SCOPE",
            help=f"a scope the token carries (repeatable): {', '.join(SCOPES)}",
        )
        parser.add_argument("--label", default="", help="a note to tell tokens apart in the admin")

    def handle(self, *args, name: str, scopes: list[str], label: str, **options) -> None:
        User = get_user_model()
        user = User.objects.filter(**{User.USERNAME_FIELD: name}).first()
        if user is None:
            raise CommandError(
                f"no user named {name!r}; create one with: manage.py tb_user {name} --password …"
            )
        if not user.is_active:
            raise CommandError(f"user {name!r} is inactive")
        if not scopes:
            raise CommandError(f"name at least one --scope ({', '.join(SCOPES)})")
        try:
            _, raw = token_issue(user=user, scopes=list(dict.fromkeys(scopes)), name=label)
        except ScopeUnknown as exc:
            raise CommandError(str(exc)) from exc
        # The raw token alone on stdout so scripts can capture it: TOKEN=$(manage.py tb_token …).
        self.stdout.write(raw)
        self.stderr.write(
            f"token for {name} with scope(s) {', '.join(dict.fromkeys(scopes))}; "
            "it is shown only now — store it, e.g. export TURBOBASE_TOKEN=…"
        )
