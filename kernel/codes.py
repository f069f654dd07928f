"""The kernel's own codes: the defaults of the error family and the handler's. Never reused.

Each room adds its own enum in its own ``codes.py``; these are only what ``kernel.errors`` itself
puts on a body when a subclass or DRF names nothing more precise.
"""

from __future__ import annotations

from enum import StrEnum


class KernelCode(StrEnum):
    REFUSED = "REFUSED"  # a Refusal that names no code of its own
    INVALID = "INVALID"  # an InvalidRequest that names no code of its own
    INVALID_JSON = "INVALID_JSON"  # the body is not JSON (DRF's ParseError)
    INVALID_NUMBER = "INVALID_NUMBER"  # a request number that is not finite (1e999)
    INVALID_FILTER = "INVALID_FILTER"  # a list's query parameter is unknown or its value refused
    INVALID_ID = "INVALID_ID"  # an id that is not a UUID
    INVALID_TEXT = "INVALID_TEXT"  # a request string that cannot be stored as text
    SCOPE_UNKNOWN = "SCOPE_UNKNOWN"  # a token asked for a scope that does not exist
    SCHEMA_UNUSABLE = (
        "SCHEMA_UNUSABLE"  # an author's JSON Schema cannot be applied (kernel.schemas)
    )


class KernelError(StrEnum):
    """The top-level ``error`` of a body the kernel's exception family answers. Never reused.

    Each room adds the values it alone answers in its own ``codes.py``; a room that answers one of
    these (``not_found``, ``forbidden``…) uses the member here rather than spelling it again.
    """

    ERROR = "error"  # a TurbobaseError that names nothing more precise
    WRITE_REFUSED = "write_refused"  # a Refusal's default
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    FORBIDDEN = "forbidden"
    ADMIN_REQUIRED = "admin_required"
    INVALID_REQUEST = "invalid_request"
    NOT_AUTHENTICATED = "not_authenticated"
    SCHEMA_UNUSABLE = "schema_unusable"
    INSUFFICIENT_SCOPE = "insufficient_scope"
    SCOPE_UNDECLARED = "scope_undeclared"
    TOO_MANY_ATTEMPTS = "too_many_attempts"
