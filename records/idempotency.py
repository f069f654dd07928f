"""A caller's idempotency key, as a write or an invoke receives it: checked before it is used."""

from __future__ import annotations

from typing import Any

from kernel.text import text_problem
from records.errors import PayloadInvalid

IDEMPOTENCY_KEY_MAX_CHARS = 200  # README: limits


def idempotency_key_check(key: Any, field: str) -> str | None:
    """``key`` as a caller's idempotency key (None when absent), or 400 naming ``field``."""
    if key is None or key == "":
        return None
    if not isinstance(key, str):
        raise PayloadInvalid(f"{field} must be a string", field=field)
    if len(key) > IDEMPOTENCY_KEY_MAX_CHARS:
        raise PayloadInvalid(
            f"{field} is {len(key)} characters; at most {IDEMPOTENCY_KEY_MAX_CHARS} are accepted",
            field=field,
        )
    problem = text_problem(key)
    if problem is not None:
        raise PayloadInvalid(f"{field} {problem}", field=field)
    return key
