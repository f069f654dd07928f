"""One middleware per request for the operator's eyes: its id on every log line it causes and on
its answer (``X-Request-ID``), and its route and status counted for ``/metrics``.

The id is the caller's ``X-Request-ID`` when it sent a sane one (a proxy's, so the two logs join
up), else a new one. The route is the URL pattern that matched (``v1/processes/<str:process_id>``),
never the path itself: one series per route, however many records there are.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from kernel.log_context import log_context_drop, log_context_set
from kernel.metrics import HTTP_REQUESTS

REQUEST_ID_HEADER = "X-Request-ID"
_SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
UNMATCHED_ROUTE = "<unmatched>"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def request_id_of(request: HttpRequest) -> str:
    given = request.headers.get(REQUEST_ID_HEADER, "")
    return given if _SANE_ID.fullmatch(given) else uuid.uuid4().hex


def request_id_forget(sender: object, **kwargs: object) -> None:
    """``request_finished``: the thread's next lines are about no request."""
    log_context_drop("request_id")


class RequestObserveMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_of(request)
        # Set, not scoped to this call: Django logs a 4xx/5xx ("Not Found: …") after the last
        # middleware returns. ``request_finished`` (the response closed) takes it off again.
        log_context_set(request_id=request_id)
        response = self.get_response(request)
        response[REQUEST_ID_HEADER] = request_id
        match = getattr(request, "resolver_match", None)
        route = (match.route or UNMATCHED_ROUTE) if match is not None else UNMATCHED_ROUTE
        method = request.method if request.method in _METHODS else "other"
        HTTP_REQUESTS.labels(route=route, method=method, status=str(response.status_code)).inc()
        return response
