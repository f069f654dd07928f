"""An unreachable database is a retryable JSON 503, never Django's HTML 500.

One middleware for every view (the API's, health, the admin): when a view fails because
PostgreSQL cannot be reached — refused, restarting, the pool timed out waiting for a connection, the
connection dropped — the answer is ``503 {"error": EdgeCode.DATABASE_UNAVAILABLE, …}`` with
``Retry-After``. Nothing is cached about the outage: the next request tries again, so the instance
recovers by itself when the database is back. Other database errors are left alone.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

from turbobase.codes import EdgeCode

RETRY_AFTER_S = 5
# SQLSTATEs the server sends when it cannot serve us right now: connection exceptions (08xxx),
# shutting down / crashed / starting up (57P01-57P03), too many connections (53300).
UNAVAILABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300"})


def database_unreachable(exc: BaseException) -> bool:
    """True when ``exc`` says PostgreSQL cannot be reached, not that a statement failed."""
    if not isinstance(exc, (OperationalError, InterfaceError)):
        return False
    import psycopg

    cause = exc.__cause__
    if not isinstance(cause, psycopg.Error):  # SQLite's "database is locked" and the like
        return False
    if isinstance(exc, InterfaceError):  # "the connection is closed"
        return True
    sqlstate = cause.sqlstate
    # No SQLSTATE: libpq failed before the server answered (refused, reset, pool timeout).
    return sqlstate is None or sqlstate.startswith("08") or sqlstate in UNAVAILABLE_SQLSTATES


def unavailable_response() -> JsonResponse:
    return JsonResponse(
        {
            "error": EdgeCode.DATABASE_UNAVAILABLE,
            "message": "the database cannot be reached right now; retry shortly",
        },
        status=503,
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )


class DatabaseUnavailableMiddleware:
    """Turns a view's "database unreachable" exception into the 503 above."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        return unavailable_response() if database_unreachable(exception) else None


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: what escapes every view and middleware — a session saved after the view
    while the database drops, say. Django calls it inside its ``except`` block, so the exception
    is ``sys.exc_info()``. An unreachable database is the same JSON 503 as above; any other
    failure on the API is a JSON 500 (an app parses it like every other answer); the admin and
    the pages keep Django's own page."""
    import sys

    from django.views.defaults import server_error as django_server_error

    exc = sys.exc_info()[1]
    if exc is not None and database_unreachable(exc):
        return unavailable_response()
    if request.path.startswith("/v1/"):
        return JsonResponse(
            {"error": EdgeCode.SERVER_ERROR, "message": "the instance failed; it was logged"},
            status=500,
        )
    return django_server_error(request)
