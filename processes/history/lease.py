"""Taking, renewing and freeing the purge lease (``HistoryPurgeLease``): one purge at a time."""

from __future__ import annotations

from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from processes.history.models import PURGE_LEASE_NAME, HistoryPurgeLease

# Renewed after every batch (a batch takes well under a second); a purge whose worker died frees
# the lease this long after its last batch.
LEASE_SECONDS = 120


def _lease_row() -> None:
    """The lease's one row, made the first time (a concurrent first time makes it once)."""
    if HistoryPurgeLease.objects.filter(name=PURGE_LEASE_NAME).exists():
        return
    try:
        with transaction.atomic():
            HistoryPurgeLease.objects.create(name=PURGE_LEASE_NAME)
    except IntegrityError:
        pass  # another purge made it just now


def lease_take(owner: str) -> bool:
    """Take the lease for ``owner`` if it is free or its holder's time ran out; False if held."""
    _lease_row()
    now = timezone.now()
    return bool(
        HistoryPurgeLease.objects.filter(name=PURGE_LEASE_NAME)
        .filter(Q(held_until__isnull=True) | Q(held_until__lt=now))
        .update(owner=owner, held_until=now + timedelta(seconds=LEASE_SECONDS), started_at=now)
    )


def lease_renew(owner: str) -> bool:
    """Extend ``owner``'s lease; False if it is no longer ``owner``'s (it ran out and was taken)."""
    until = timezone.now() + timedelta(seconds=LEASE_SECONDS)
    return bool(
        HistoryPurgeLease.objects.filter(name=PURGE_LEASE_NAME, owner=owner).update(
            held_until=until
        )
    )


def lease_free(owner: str) -> None:
    HistoryPurgeLease.objects.filter(name=PURGE_LEASE_NAME, owner=owner).update(
        owner="", held_until=None
    )
