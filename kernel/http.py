"""The one place domain errors become HTTP: DRF's exception handler, in the seed's body shapes.

``TurbobaseError`` renders its own ``body()`` with its ``http_status``; DRF's and Django's own
exceptions are mapped to the same shapes (``{error, message}`` or ``{error, rejection}``), and the
transaction is marked for rollback either way.
"""

from __future__ import annotations

import math

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.utils import timezone
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response
from rest_framework.views import set_rollback

from kernel.codes import KernelCode, KernelError
from kernel.errors import TurbobaseError

# A 429 that cannot say when to come back still tells the client to back off, rather than nothing.
RETRY_AFTER_DEFAULT_S = 60


def retry_after_seconds(exc: Exception) -> int:
    """Seconds until ``exc`` may be retried: its ``retry_at``, DRF's ``wait``, or the default."""
    retry_at = getattr(exc, "retry_at", None)
    if retry_at is not None:
        return max(1, math.ceil((retry_at - timezone.now()).total_seconds()))
    wait = getattr(exc, "wait", None)
    if wait is not None:
        return max(1, math.ceil(wait))
    return RETRY_AFTER_DEFAULT_S


def exception_handler(exc: Exception, context: dict) -> Response | None:
    """DRF exception handler: every error rendered once, and every 429 says when to retry."""
    response = _error_response(exc, context)
    if response is not None and response.status_code == 429 and "Retry-After" not in response:
        response["Retry-After"] = str(retry_after_seconds(exc))
    return response


def _error_response(exc: Exception, context: dict) -> Response | None:
    """Domain errors and DRF's own, in the seed's body shapes."""
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
        auth_header = getattr(exc, "auth_header", None)  # set by DRF on authentication refusals
        if auth_header:
            headers["WWW-Authenticate"] = auth_header
        if isinstance(exc, (drf_exceptions.NotAuthenticated, drf_exceptions.AuthenticationFailed)):
            return Response(
                {"error": KernelError.NOT_AUTHENTICATED, "message": str(exc.detail)},
                status=401,
                headers=headers,
            )
        if isinstance(exc, drf_exceptions.ParseError):
            return Response(
                {
                    "error": KernelError.INVALID_REQUEST,
                    "rejection": {
                        "code": KernelCode.INVALID_JSON,
                        "field": None,
                        "message": str(exc.detail),
                    },
                },
                status=400,
            )
        code = exc.get_codes() if isinstance(exc.detail, str) else exc.default_code
        return Response(
            {
                "error": code if isinstance(code, str) else exc.default_code,
                "message": str(exc.detail),
            },
            status=exc.status_code,
            headers=headers,
        )
    return None
