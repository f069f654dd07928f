"""Per-record-type lanes: the lease that makes one drain the only sender of a type.

A conditional UPDATE takes the lane when it is free or its lease ran out, so it needs no row
locks and behaves the same on SQLite and PostgreSQL. ``select_for_update(skip_locked=True)``
was rejected: the send happens outside any transaction (a network call must not hold one open),
so a row lock would not outlive the claim, and SQLite has no row locks at all.
"""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from sources.models import SourceLane


def _free(now) -> Q:
    return Q(holder="") | Q(lease_until__isnull=True) | Q(lease_until__lt=now)


def lane_acquire(*, record_type: str, token: str, seconds: float) -> bool:
    """Take the lane for ``record_type``; True only for the one caller that got it. The lane's
    row is made on first use: only a lane not taken looks whether it exists."""
    now = timezone.now()
    free = SourceLane.objects.filter(_free(now), record_type=record_type)
    held = {"holder": token, "lease_until": now + timedelta(seconds=seconds), "updated_at": now}
    if free.update(**held):
        return True
    if not SourceLane.objects.get_or_create(record_type=record_type)[1]:
        return False  # it exists: held by another drain
    return free.update(**held) == 1


def lane_renew(*, record_type: str, token: str, seconds: float) -> bool:
    """Extend our lease before a send; False means it ran out and someone else may hold it now."""
    now = timezone.now()
    return (
        SourceLane.objects.filter(
            record_type=record_type, holder=token, lease_until__gte=now
        ).update(lease_until=now + timedelta(seconds=seconds), updated_at=now)
        == 1
    )


def lane_release(*, record_type: str, token: str) -> None:
    SourceLane.objects.filter(record_type=record_type, holder=token).update(
        holder="", lease_until=None, updated_at=timezone.now()
    )


def lane_is_held(*, record_type: str) -> bool:
    """Someone holds a live lease on the lane (and will re-check for work after releasing it)."""
    return (
        SourceLane.objects.filter(record_type=record_type).exclude(_free(timezone.now())).exists()
    )
