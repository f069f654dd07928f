"""Ids from outside (path segments, JSON bodies) parsed once, instead of guessed from a
database driver's exception text after a query failed on them."""

from __future__ import annotations

import uuid
from typing import Any

from kernel.codes import KernelCode
from kernel.errors import InvalidRequest


class IdMalformed(InvalidRequest):
    """The value is not an id of the expected shape."""

    code = KernelCode.INVALID_ID


def uuid_or_none(value: Any) -> uuid.UUID | None:
    """``value`` as a UUID, or None when it is not one (an id that cannot exist)."""
    if isinstance(value, uuid.UUID):
        return value
    if not isinstance(value, str):
        return None
    try:
        return uuid.UUID(value)
    except ValueError:  # also covers NUL bytes and lone surrogates: they are not hex digits
        return None


def uuid_parse(value: Any, *, field: str) -> uuid.UUID:
    """``value`` as a UUID, else 400 ``INVALID_ID`` naming ``field``."""
    parsed = uuid_or_none(value)
    if parsed is None:
        raise IdMalformed(f"{field} must be a UUID", field=field)
    return parsed
