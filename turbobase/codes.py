"""The error codes of the answers the instance's edge gives before any view runs. Never reused.

Django's own refusals under ``/v1/`` (``api_errors.py``) and what gunicorn refuses before Django
sees the request (``gunicorn_worker.py``) answer ``{error, message}`` with one of these, or with
the kernel's ``KernelError`` where the meaning is the kernel's (``not_found``, ``forbidden``).
"""

from __future__ import annotations

from enum import StrEnum


class EdgeCode(StrEnum):
    BAD_REQUEST = (
        "bad_request"  # the request cannot be read (a body over the upload limit, a bad header)
    )
    REQUEST_LINE_TOO_LONG = "request_line_too_long"  # over gunicorn's limit_request_line
    REQUEST_HEADERS_TOO_LARGE = (
        "request_headers_too_large"  # a header line or the count over its limit
    )
    EXPECTATION_FAILED = "expectation_failed"  # an Expect header gunicorn does not support
    NOT_IMPLEMENTED = "not_implemented"  # a transfer coding gunicorn does not support
    SERVER_ERROR = "server_error"  # the server failed outside Django's handling
    DATABASE_UNAVAILABLE = "database_unavailable"  # PostgreSQL cannot be reached (a 503)
    INVALID_CREDENTIALS = "invalid_credentials"  # sign-in: wrong username or password
    NOT_READY = "not_ready"  # /v1/health/ready: a check failed
