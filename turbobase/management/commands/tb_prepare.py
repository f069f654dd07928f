"""``manage.py tb_prepare``: everything an instance needs before it serves, safe to run every time.

Creates the PostgreSQL database ``DATABASE_URL`` names when it does not exist yet, applies the
migrations and collects the static files WhiteNoise serves (the admin's CSS/JS, the API docs).
``make run`` runs it before ``tb_demo`` and ``tb_run``; a production release step runs it once per
deploy.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from turbobase.dburl import postgres_database_ensure


class Command(BaseCommand):
    help = "Create a missing PostgreSQL database, migrate, and collect static files."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-static", action="store_true", help="skip collectstatic")

    def handle(self, *args, no_static: bool, **options) -> None:
        database = settings.DATABASES["default"]
        if postgres_database_ensure(database):
            self.stdout.write(f"created PostgreSQL database {database['NAME']!r}")
        call_command("migrate", interactive=False, verbosity=max(0, options["verbosity"] - 1))
        if not no_static:
            static_collect()


def static_collect() -> None:
    """Copy every app's static files to STATIC_ROOT (only what changed since the last run)."""
    call_command("collectstatic", interactive=False, verbosity=0)
