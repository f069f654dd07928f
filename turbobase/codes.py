"""The error codes of the answers the instance's edge gives before any view runs. Never reused.

Django's own refusals under ``/v1/`` (``api_errors.py``) and what gunicorn refuses before Django
sees the request (``gunicorn_worker.py``) answer ``{error, message}`` with one of these.
"""

from __future__ import annotations

from enum import StrEnum


class EdgeCode(StrEnum):
    NOT_FOUND = "not_found"  # no route matches the path
    BAD_REQUEST = (
        "bad_request"  # the request cannot be read (a body over the upload limit, a bad header)
    )
    FORBIDDEN = "forbidden"  # gunicorn refused a proxy or TLS request
    REQUEST_LINE_TOO_LONG = "request_line_too_long"  # over gunicorn's limit_request_line
    REQUEST_HEADERS_TOO_LARGE = (
        "request_headers_too_large"  # a header line or the count over its limit
    )
    EXPECTATION_FAILED = "expectation_failed"  # an Expect header gunicorn does not support
    NOT_IMPLEMENTED = "not_implemented"  # a transfer coding gunicorn does not support
    SERVER_ERROR = "server_error"  # the server failed outside Django's handling
