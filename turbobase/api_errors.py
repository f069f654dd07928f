"""Django's own 404 and 400 answers, as JSON under ``/v1/``.

A request Django refuses before any view (no route matches; a body over
``DATA_UPLOAD_MAX_MEMORY_SIZE`` and other ``SuspiciousOperation``s) would get Django's HTML page.
Under ``/v1/`` every answer is JSON with an ``error`` code, so these handlers answer the API's
shape there and Django's default pages elsewhere (the admin, the home page). A 400 answered
before the body was read says ``Connection: close``: the unread body must not be taken for the
next request on the connection (gunicorn ignores an application's ``Connection`` header; its
worker, ``gunicorn_worker``, honours this one — see ``connection_close``).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

from kernel.codes import KernelError
from turbobase.codes import EdgeCode

API_PREFIX = "/v1/"


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if not request.path.startswith(API_PREFIX):
        return defaults.page_not_found(request, exception)
    return JsonResponse(
        {
            "error": KernelError.NOT_FOUND,
            "message": f"no API route {request.path!r}; the routes are listed at /api/docs",
        },
        status=404,
    )


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if not request.path.startswith(API_PREFIX):
        return defaults.bad_request(request, exception)  # type: ignore[arg-type]
    response = JsonResponse(
        {"error": EdgeCode.BAD_REQUEST, "message": str(exception or "the request cannot be read")},
        status=400,
    )
    response["Connection"] = "close"
    return response
