"""Refuse a request whose path or query string carries text nothing can store.

A ``%00`` in a path id (``/v1/processes/a%00b``) or a query value reached the database driver
and failed there (500). Checked once here, before URL routing, for every route — the API, the
admin and the schema alike — with the same 400 ``INVALID_TEXT`` body a request body gets from
``kernel.parsers``, naming ``path`` or the query parameter.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import parse_qsl

from django.http import HttpRequest, HttpResponse, JsonResponse

from kernel.input import InvalidText
from kernel.text import text_problem


def request_text_problem(request: HttpRequest) -> InvalidText | None:
    """The refusal for the first unstorable piece of the path or query string, if any."""
    problem = text_problem(request.path_info)
    if problem is not None:
        return InvalidText(f"the path {problem}", field="path")
    # The same decoding as request.GET and the PostgREST read: UTF-8, + as a space.
    for name, value in parse_qsl(request.META.get("QUERY_STRING", ""), keep_blank_values=True):
        for piece, what in ((name, "name"), (value, "value")):
            problem = text_problem(piece)
            if problem is not None:
                return InvalidText(
                    f"the query parameter {name!r} {what} {problem}",
                    field=name if what == "value" else "query",
                )
    return None


class RequestTextMiddleware:
    """Answer 400 before routing when the path or query string holds NUL or a lone surrogate."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        refusal = request_text_problem(request)
        if refusal is not None:
            return JsonResponse(refusal.body(), status=refusal.http_status)
        return self.get_response(request)
