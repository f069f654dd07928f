"""``/``: a small home page — which instance this is, whether it is healthy, and where to go next."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

LINKS = (
    ("/admin/", "Admin", "users, tokens, records, processes, guardrails"),
    ("/api/docs", "API docs", "every route, tried in the browser"),
    ("/api/schema", "OpenAPI schema", "for clients and code generators"),
    ("/v1/health", "Health", "JSON, no credentials needed"),
)


def _database_ok() -> bool:
    # The page itself must render while the database is down: it says so instead of failing.
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        return False
    return True


def _version() -> str:
    try:
        return version("turbobase")
    except PackageNotFoundError:  # run from a checkout that was never pip-installed
        return "unknown"


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    database_ok = _database_ok()
    return render(
        request,
        "turbobase/home.html",
        {
            "instance": settings.TURBOBASE_INSTANCE_NAME,
            "version": _version(),
            "database_ok": database_ok,
            "database": connection.vendor,
            "links": LINKS,
        },
        status=200 if database_ok else 503,
    )
