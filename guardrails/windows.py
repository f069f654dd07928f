"""Rolling delete windows: the ordinary delete cap (refuses) and the rollback cap (waits).

Each window is a count of ``WindowEvent`` rows newer than ``now - span``. Admission takes the
``WindowLock`` row for (kind, source system) FOR UPDATE, so two deletes cannot both pass the last
free slot (SQLite serialises writers already).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from guardrails.models import WindowEvent, WindowKind, WindowLock
from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get

SPANS: tuple[tuple[str, timedelta], ...] = (
    ("min", timedelta(minutes=1)),
    ("hour", timedelta(hours=1)),
    ("day", timedelta(days=1)),
)


def _cap_key(kind: str, span: str) -> SettingKey:
    prefix = "max_deletes" if kind == WindowKind.DELETE else "max_rollback_deletes"
    return SettingKey(f"guardrails.{prefix}_per_{span}")


@dataclass(frozen=True)
class Admission:
    """The window's answer: admitted (and charged), or the cap that stops it and when it frees."""

    admitted: bool
    cap: str | None = None
    limit: int | None = None
    retry_at: datetime | None = None


def window_admit(
    *, kind: str, source_system: str, now: datetime | None = None, charge: bool = True
) -> Admission:
    """Charge one delete to the windows of ``kind`` if every window has room.

    Must run inside the caller's transaction so the charge commits (or rolls back) with the delete.
    """
    now = now or timezone.now()
    window_hold(kind=kind, source_system=source_system)
    admission = window_room(kind=kind, source_system=source_system, now=now)
    if admission.admitted and charge:
        WindowEvent.objects.create(kind=kind, source_system=source_system, at=now)
    return admission


def window_hold(*, kind: str, source_system: str) -> None:
    """Take the window's lock row FOR UPDATE until the caller's transaction ends: two writers
    holding it one after the other each count the other's committed charges (``window_room``
    after it, in a statement of its own, sees them)."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("window_admit must run inside the delete's transaction")
    WindowLock.objects.get_or_create(kind=kind, source_system=source_system)
    WindowLock.objects.select_for_update().get(kind=kind, source_system=source_system)


def window_room(
    *, kind: str, source_system: str, now: datetime | None = None, pending: int = 0
) -> Admission:
    """Whether one more delete fits every window of ``kind`` after the charges committed and
    ``pending`` more the caller will charge first; charges nothing. Unlocked, it is a forecast
    (a grouped delete decides by it as it is made ready); under ``window_hold`` it is the
    decision."""
    now = now or timezone.now()
    events = WindowEvent.objects.filter(kind=kind, source_system=source_system)
    # One read for the three spans, of the longest span's rows only (the index's range).
    counts = events.filter(at__gt=now - SPANS[-1][1]).aggregate(
        **{span: Count("id", filter=Q(at__gt=now - length)) for span, length in SPANS}
    )
    for span, length in SPANS:
        key = _cap_key(kind, span)
        limit = setting_get(key)
        if counts[span] + pending >= limit:
            # The window frees when its oldest charge that keeps it full ages out.
            in_window = events.filter(at__gt=now - length)
            ats = list(in_window.order_by("-at").values_list("at", flat=True)[: max(limit, 1)])
            oldest_needed = ats[-1] if ats else now
            return Admission(False, cap=key, limit=limit, retry_at=oldest_needed + length)
    return Admission(True)


def window_prune(*, older_than: timedelta = timedelta(days=2)) -> int:
    """Drop charges no window can see any more."""
    deleted, _ = WindowEvent.objects.filter(at__lt=timezone.now() - older_than).delete()
    return deleted
