"""The audit trail: one row per operator action, whichever room it happened in.

A setting changed (old → new), a process or every process switched, a held delete decided, a run
steered, a schedule paused or resumed: each room calls ``audit_record`` inside the transaction
that makes the change, so the trail and the change commit or roll back together. Rows are never
changed or deleted by the product; ``actor_name`` keeps who it was after a user is removed.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models


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
