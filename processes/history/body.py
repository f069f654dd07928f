"""``POST /v1/history/purge``'s body, checked strictly: ``{dryRun?: boolean, finishedBefore?:
ISO 8601 time with an offset}``; anything else is 400 naming the field, and nothing is purged."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils.dateparse import parse_datetime

from processes.history.errors import PurgeInvalid

BODY_KEYS = ("dryRun", "finishedBefore")


def purge_body_check(body: Any) -> tuple[bool, datetime | None]:
    """``(dry_run, finished_before)`` from the body; an empty body purges by the thresholds."""
    if body is None or body == {}:
        return False, None
    if not isinstance(body, dict):
        raise PurgeInvalid(
            "the body must be a JSON object {dryRun?, finishedBefore?}", field="body"
        )
    unknown = sorted(set(body) - set(BODY_KEYS))
    if unknown:
        raise PurgeInvalid(
            f"{unknown[0]} is not a key of a purge (dryRun, finishedBefore)", field=unknown[0]
        )
    dry_run = body.get("dryRun", False)
    if not isinstance(dry_run, bool):
        raise PurgeInvalid("dryRun must be true or false", field="dryRun")
    raw = body.get("finishedBefore")
    return dry_run, None if raw is None else finished_before_parse(raw)


def finished_before_parse(raw: Any, *, field: str = "finishedBefore") -> datetime:
    """An ISO 8601 time with its offset (``2026-01-31T00:00:00Z``); a time without one is
    refused rather than guessed at."""
    try:
        parsed = parse_datetime(raw) if isinstance(raw, str) else None
    except ValueError:
        parsed = None
    if parsed is None:
        raise PurgeInvalid(
            f"{field} must be an ISO 8601 time such as 2026-01-31T00:00:00Z", field=field
        )
    if parsed.tzinfo is None:
        raise PurgeInvalid(
            f"{field} must say its offset (Z, +02:00): {raw!r:.40} does not", field=field
        )
    return parsed
