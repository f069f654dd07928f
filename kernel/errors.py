"""The one family of domain exceptions, and the one place that turns them into HTTP.

Every room raises subclasses of ``TurbobaseError``; views never build error bodies. A refusal
(``Refusal``) always carries ``{code, field, message}`` and renders as
``{error, rejection: {code, field, message}}``; other errors render as ``{error, …extra}``.
"""
from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response
from rest_framework.views import set_rollback


class TurbobaseError(Exception):
    """Something went wrong."""

    error: str = "error"  # the top-level ``error`` of the HTTP body
    http_status: int = 400
    retryable: bool = False

    def __init__(self, message: str | None = None, **extra: Any) -> None:
        self.message = message or (self.__doc__ or self.error).strip()
        self.extra = extra
        super().__init__(self.message)

    def body(self) -> dict[str, Any]:
        return {"error": self.error, "message": self.message, **self.extra}


class Refusal(TurbobaseError):
    """The write was refused."""

    error = "write_refused"
    http_status = 422
    code: str = "REFUSED"

    def __init__(
        self,
        message: str | None = None,
        *,
        field: str | None = None,
        code: str | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message, **extra)
        if code:
            self.code = code
        self.field = field

    def rejection(self) -> dict[str, Any]:
        return {"code": self.code, "field": self.field, "message": self.message}

    def body(self) -> dict[str, Any]:
        return {"error": self.error, "rejection": self.rejection(), **self.extra}


class NotFound(TurbobaseError):
    """Not found."""

    error = "not_found"
    http_status = 404

    def body(self) -> dict[str, Any]:
        return {"error": self.error, **self.extra}


class Conflict(Refusal):
    """The record changed underneath the write."""

    error = "conflict"
    http_status = 409


class Forbidden(TurbobaseError):
    """You may not do that."""

    error = "forbidden"
    http_status = 403


class InvalidRequest(Refusal):
    """The request is not valid."""

    error = "invalid_request"
    http_status = 400
    code = "INVALID"


def exception_handler(exc: Exception, context: dict) -> Response | None:
    """DRF exception handler: domain errors and DRF's own, in the seed's body shapes."""
    if isinstance(exc, TurbobaseError):
        set_rollback()
        return Response(exc.body(), status=exc.http_status)
    if isinstance(exc, Http404):
        exc = drf_exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = drf_exceptions.PermissionDenied()
    if isinstance(exc, drf_exceptions.APIException):
        set_rollback()
        headers = {}
        if getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = exc.auth_header
        if isinstance(exc, (drf_exceptions.NotAuthenticated, drf_exceptions.AuthenticationFailed)):
            return Response(
                {"error": "not_authenticated", "message": str(exc.detail)},
                status=401,
                headers=headers,
            )
        if isinstance(exc, drf_exceptions.ParseError):
            return Response(
                {
                    "error": "invalid_request",
                    "rejection": {"code": "INVALID_JSON", "field": None, "message": str(exc.detail)},
                },
                status=400,
            )
        code = exc.get_codes() if isinstance(exc.detail, str) else exc.default_code
        return Response(
            {"error": code if isinstance(code, str) else exc.default_code, "message": str(exc.detail)},
            status=exc.status_code,
            headers=headers,
        )
    return None
