"""Pacing per connected source: a rate, a cap on writes in flight, and backing off when asked.

Limits are instance settings declared by pattern (``guardrails.patterns``):
``sources.<name>.max_per_second`` and ``sources.<name>.max_in_flight``, unlimited by default and
read through the settings cache, so an edit reaches every worker within a second or two.

The state lives in the database, not in a process, because the drains of one source's record
types run in different worker processes: ``SourcePace`` (one row per source: the next rate slot
and the backoff) and ``SourceInFlight`` (one row per write being sent). Each decision first
touches the source's row with an UPDATE — a row lock on PostgreSQL, the write lock on SQLite —
and then reads and decides inside the same transaction, so two workers never take one slot.

Backing off: a 429 or 503 (``Retry-After`` in seconds or as a date) or a timeout sets
``paced_until`` on the source; until then no write goes to it. Without ``Retry-After`` the wait
grows exponentially from 1 s to 5 min (the outbound retry base and cap), with jitter so that
many sources do not come back in step.
The write that was slowed down stays at the head of its type's lane (``sources.outbound``), so
nothing overtakes it and nothing is sent twice by us (a re-send carries the same idempotency key).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from guardrails.patterns import pattern_spec
from guardrails.settings import setting_get
from sources.conf import outbound_conf
from sources.models import SourceInFlight, SourcePace

BUSY_RECHECK_S = 0.05  # every place in flight is taken: look again this soon
RETRY_AFTER_MAX_S = 3600.0  # a source asking for longer is asked again after an hour


@dataclass(frozen=True)
class PaceLimits:
    max_per_second: int | None  # None: no limit
    max_in_flight: int | None


@dataclass(frozen=True)
class PaceTicket:
    """The answer to "may I send to this source?": a start time, or a time to come back."""

    start_at: datetime | None = None  # granted: send at (or after) this instant
    wait_until: datetime | None = None  # refused for now: nothing was taken
    paced: bool = False  # the wait is the source's own slow-down (not our rate or in-flight cap)
    granted: int = 0  # how many writes may go, one after another, from ``start_at`` …
    interval_s: float = 0.0  # … each this long after the one before (the rate's spacing)

    def slot(self, index: int) -> datetime:
        """When the ``index``-th write of the granted run may start."""
        start = self.start_at or timezone.now()
        return start + timedelta(seconds=index * self.interval_s)


def _limit(source: str, what: str) -> int | None:
    key = f"sources.{source}.{what}"
    if pattern_spec(key) is None:  # a source name the pattern cannot hold has no limit to set
        return None
    return setting_get(key) or None


def pace_limits(source: str) -> PaceLimits:
    return PaceLimits(_limit(source, "max_per_second"), _limit(source, "max_in_flight"))


def _locked(source: str) -> SourcePace:
    """The source's row, locked for the rest of the transaction (created on first use): the
    UPDATE first, so an existing row costs it and one read."""
    rows = SourcePace.objects.filter(source=source)
    if not rows.update(updated_at=timezone.now()):
        SourcePace.objects.get_or_create(source=source)
        rows.update(updated_at=timezone.now())
    return rows.get()


def pace_take(
    *, source: str, holder: str, lease_seconds: float, horizon_s: float, want: int = 1
) -> PaceTicket:
    """Take rate slots for up to ``want`` writes to ``source``, sent one after another, and one
    place in flight for them (the holder sends one at a time), or say when to ask again.

    A slot further off than ``horizon_s`` is not reserved: the caller lets its worker go and
    comes back then, rather than holding a slot it cannot yet use. Of a run, only the slots
    that start within ``horizon_s`` are granted (at least one).
    """
    limits = pace_limits(source)
    with transaction.atomic():
        pace = _locked(source)
        now = timezone.now()
        if pace.paced_until is not None and pace.paced_until > now:
            return PaceTicket(wait_until=pace.paced_until, paced=True)
        if limits.max_in_flight is not None:  # only a cap counts the places in flight
            live = SourceInFlight.objects.filter(source=source)
            live.filter(lease_until__lt=now).delete()  # a worker died mid-send: its place is free
            if live.count() >= limits.max_in_flight:
                return PaceTicket(wait_until=now + timedelta(seconds=BUSY_RECHECK_S))
        start, granted, interval = now, max(want, 1), 0.0
        if limits.max_per_second is not None:
            start = max(now, pace.next_slot_at or now)
            ahead = (start - now).total_seconds()
            if ahead > horizon_s:
                return PaceTicket(wait_until=start)
            interval = 1 / limits.max_per_second
            granted = max(1, min(granted, 1 + int((horizon_s - ahead) / interval)))
            pace.next_slot_at = start + timedelta(seconds=granted * interval)
            pace.save(update_fields=["next_slot_at", "updated_at"])
        # One upsert on the holder (unique): a place its holder did not free is taken over.
        place = SourceInFlight(
            source=source, holder=holder, lease_until=now + timedelta(seconds=lease_seconds)
        )
        SourceInFlight.objects.bulk_create(
            [place],
            update_conflicts=True,
            unique_fields=["holder"],
            update_fields=["source", "lease_until"],
        )
        return PaceTicket(start_at=start, granted=granted, interval_s=interval)


def pace_release(*, holder: str) -> None:
    """The source answered (or the send ended some other way): free the place in flight."""
    SourceInFlight.objects.filter(holder=holder).delete()


def backoff_seconds(backoffs: int) -> float:
    """Our own wait after the ``backoffs``-th slow-down in a row: 1 s, 2 s, 4 s … 5 min, jittered
    (the outbound worker's ``SOURCES_RETRY_BASE_SECONDS`` and ``SOURCES_RETRY_CAP_SECONDS``)."""
    conf = outbound_conf()
    base = min(conf.retry_cap_seconds, conf.retry_base_seconds * 2 ** max(backoffs - 1, 0))
    return min(conf.retry_cap_seconds, base * random.uniform(1.0, 1.25))  # noqa: S311 — jitter


def pace_slow_down(*, source: str, retry_after: float | None, reason: str) -> datetime:
    """The source asked us to slow down: hold every write to it until the returned instant."""
    with transaction.atomic():
        pace = _locked(source)
        pace.backoffs += 1
        delay = (
            min(retry_after, RETRY_AFTER_MAX_S)
            if retry_after is not None
            else backoff_seconds(pace.backoffs)
        )
        until = timezone.now() + timedelta(seconds=delay)
        # Two lanes slowed down at once keep the later of their two waits.
        pace.paced_until = max(until, pace.paced_until) if pace.paced_until else until
        pace.last_reason = reason[:255]
        pace.save(update_fields=["backoffs", "paced_until", "last_reason", "updated_at"])
        return pace.paced_until


def pace_recovered(*, source: str) -> None:
    """The source answered normally: the next slow-down starts from 1 s again.

    A backoff another lane set meanwhile (``paced_until`` still ahead) is left standing.
    """
    now = timezone.now()
    SourcePace.objects.filter(
        Q(paced_until__isnull=True) | Q(paced_until__lte=now), source=source, backoffs__gt=0
    ).update(backoffs=0, paced_until=None, updated_at=now)


def paced_until(source: str) -> datetime | None:
    """Until when ``source`` is backed off, or None if it is not."""
    until = SourcePace.objects.filter(source=source).values_list("paced_until", flat=True).first()
    return until if until is not None and until > timezone.now() else None


def pace_due(source: str, *, horizon_s: float = 0.0) -> datetime | None:
    """The earliest a write to ``source`` may go — its backoff, else its next rate slot — if that
    is later than now; a rate slot within ``horizon_s`` counts as now (a drain waits for it)."""
    row = (
        SourcePace.objects.filter(source=source).values_list("paced_until", "next_slot_at").first()
    )
    if row is None:
        return None
    now = timezone.now()
    backoff, slot = row
    if backoff is not None and backoff > now:
        return backoff
    return slot if slot is not None and slot > now + timedelta(seconds=horizon_s) else None
