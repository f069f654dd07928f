"""The audit trail: one row per operator action, whichever room it happened in.

A setting changed (old → new), a process or every process switched, a held delete decided, a run
steered, a schedule paused or resumed: each room calls ``audit_record`` inside the transaction
that makes the change, so the trail and the change commit or roll back together. Rows are never
changed; they are deleted only past an operator's ``audit.retain_days`` (``audit_purge``, run with
the history purge; by default every row is kept). ``actor_name`` keeps who it was after a user is
removed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models, transaction


class AuditEvent(models.Model):
    id = models.BigAutoField(primary_key=True)
    at = models.DateTimeField(auto_now_add=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = models.CharField(max_length=150, blank=True, default="")
    action = models.CharField(
        max_length=64
    )  # <thing>.<verb>: setting.changed, process.switched_off …
    target = models.CharField(max_length=255, blank=True, default="")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True, default="")

    class Meta:
        app_label = "kernel"
        db_table = "audit_event"
        indexes = [
            models.Index(fields=["action", "at"]),
            models.Index(fields=["target", "at"]),
            models.Index(fields=["actor", "at"]),
            models.Index(fields=["at"]),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name or '-'} {self.action} {self.target}"


def audit_record(
    *,
    actor: Any,
    action: str,
    target: str = "",
    before: Any = None,
    after: Any = None,
    reason: str = "",
) -> AuditEvent:
    """Keep one operator action; call it inside the transaction that makes the change."""
    user = actor if getattr(actor, "pk", None) is not None else None
    name = actor.get_username() if user is not None else ""
    return AuditEvent.objects.create(
        actor=user,
        actor_name=name,
        action=action,
        target=target[:255],
        before=before,
        after=after,
        reason=reason,
    )


def audit_latest(*, action: str, targets: list[str]) -> dict[str, AuditEvent]:
    """The newest event of ``action`` for each of ``targets`` (one query)."""
    latest: dict[str, AuditEvent] = {}
    rows = AuditEvent.objects.filter(action=action, target__in=targets).order_by(
        "target", "-at", "-id"
    )
    for event in rows.select_related("actor"):
        latest.setdefault(event.target, event)
    return latest


AUDIT_PURGE_BATCH = 5_000


def audit_purge(*, before: datetime, dry_run: bool = False) -> int:
    """Delete (``dry_run``: count) the audit events kept before ``before``, oldest first, a batch a
    transaction; answers how many. Only an operator's ``audit.retain_days`` asks for it: by
    default every event is kept."""
    old = AuditEvent.objects.filter(at__lt=before)
    if dry_run:
        return old.count()
    purged = 0
    while ids := list(old.order_by("id").values_list("id", flat=True)[:AUDIT_PURGE_BATCH]):
        with transaction.atomic():
            purged += AuditEvent.objects.filter(id__in=ids).delete()[0]
    return purged
