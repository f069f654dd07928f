"""The write trail: one row per boundary decision."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from typing import NotRequired, TypedDict, Unpack
from uuid import UUID

from django.contrib.auth.models import User
from django.db import transaction

from kernel.metrics import GUARDRAIL_DECISIONS
from kernel.rows import row_like
from kernel.text import CODE_MAX_CHARS, FIELD_MAX_CHARS, MESSAGE_MAX_CHARS, text_clean
from records.door import door_opened
from records.models import TrailOutcome, WriteTrail

_COUNTED = frozenset({TrailOutcome.HELD, TrailOutcome.REFUSED})


@dataclass(frozen=True)
class Actor:
    """Who writes, and which process run and step caused it (blank for an app's own write)."""

    user: User
    process_run_id: str = ""
    process_step: str = ""

    @property
    def is_admin(self) -> bool:
        return bool(getattr(self.user, "is_staff", False))


class TrailDecision(TypedDict):
    """One boundary decision, as ``trail_row`` and ``trail_write`` take it (keywords)."""

    actor: Actor | None
    action: str
    record_type: str
    outcome: str
    pg_row_id: NotRequired[UUID | str | None]
    code: NotRequired[str]
    field: NotRequired[str | None]
    message: NotRequired[str]


def trail_row(**decision: Unpack[TrailDecision]) -> WriteTrail:
    """The trail row of one decision, not yet saved (the boundary may insert it with its write)."""
    actor, outcome = decision["actor"], decision["outcome"]
    code = text_clean(decision.get("code") or "", CODE_MAX_CHARS)
    if outcome in _COUNTED:  # /metrics: holds and refusals by the rule (code) that decided
        GUARDRAIL_DECISIONS.labels(decision=outcome, rule=code or "unknown").inc()
    user = actor.user if actor and getattr(actor.user, "pk", None) is not None else None
    return row_like(
        _blank(),
        actor_id=user.pk if user is not None else None,
        actor_name=user.get_username() if user is not None else "",
        action=decision["action"],
        record_type=decision["record_type"],
        pg_row_id=decision.get("pg_row_id"),
        outcome=outcome,
        # A hook's or a source's words: made storable and cut to the columns (kernel.text).
        code=code,
        field=text_clean(decision.get("field") or "", FIELD_MAX_CHARS),
        message=text_clean(decision.get("message") or "", MESSAGE_MAX_CHARS),
        process_run_id=actor.process_run_id if actor else "",
        process_step=actor.process_step if actor else "",
    )


@functools.cache
def _blank() -> WriteTrail:
    """A trail row with every column at its default: each new row is a copy (``row_like``)."""
    return WriteTrail()


@door_opened
def trail_write(**decision: Unpack[TrailDecision]) -> WriteTrail:
    """The trail row of one decision, saved on its own (``trail_row`` builds it)."""
    row = trail_row(**decision)
    row.save(force_insert=True)
    return row


# Trail rows deleted per transaction by a retention purge: short transactions, no long lock.
TRAIL_PURGE_BATCH = 5_000


@door_opened
def trail_purge(*, before: datetime, dry_run: bool = False) -> int:
    """Delete (``dry_run``: count) the trail rows written before ``before``, oldest first, a
    batch a transaction; answers how many. Only ``trail.retain_days`` asks for it."""
    old = WriteTrail.reads.filter(at__lt=before)
    if dry_run:
        return old.count()
    purged = 0
    while ids := list(old.order_by("id").values_list("id", flat=True)[:TRAIL_PURGE_BATCH]):
        with transaction.atomic():
            purged += WriteTrail.objects.filter(id__in=ids).delete()[0]
    return purged
