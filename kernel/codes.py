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
