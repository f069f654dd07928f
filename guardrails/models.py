"""Guardrail policy rows: instance settings, rules, the delete windows, held deletes."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class InstanceSetting(models.Model):
    """A runtime setting an operator edits (caps, budgets). Absent → the shipped default."""

    key = models.CharField(max_length=128, primary_key=True)
    value = models.JSONField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "guardrails_setting"
        verbose_name = "write guardrail setting"

    def __str__(self) -> str:
        return f"{self.key} = {self.value}"


class Decision(models.TextChoices):
    ALLOW = "allow"
    ALLOW_WITH_AUDIT = "allow_with_audit"
    HOLD = "hold"
    DENY = "deny"


class RuleAction(models.TextChoices):
    """The write a rule decides on. Labels equal the values: the column's choices are unchanged."""

    CREATE = "create", "create"
    UPDATE = "update", "update"
    DELETE = "delete", "delete"


class GuardrailRule(models.Model):
    """``<recordType>.<action>`` → decision."""

    record_type = models.CharField(max_length=64)
    action = models.CharField(max_length=16, choices=RuleAction.choices)
    decision = models.CharField(max_length=20, choices=Decision.choices)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "guardrails_rule"
        constraints = [
            models.UniqueConstraint(fields=["record_type", "action"], name="guardrail_rule_unique")
        ]

    def __str__(self) -> str:
        return f"{self.record_type}.{self.action} → {self.decision}"


class WindowKind(models.TextChoices):
    DELETE = "delete"
    ROLLBACK = "rollback"


class WindowLock(models.Model):
    """One row per (kind, source system): taken FOR UPDATE so two deletes cannot both squeeze under a cap."""

    kind = models.CharField(max_length=16, choices=WindowKind.choices)
    source_system = models.CharField(max_length=64)

    class Meta:
        db_table = "guardrails_window_lock"
        constraints = [
            models.UniqueConstraint(fields=["kind", "source_system"], name="window_lock_unique")
        ]

    def __str__(self) -> str:
        return f"{self.kind} window lock: {self.source_system}"


class WindowEvent(models.Model):
    """One delete charged to a rolling window."""

    id = models.BigAutoField(primary_key=True)
    kind = models.CharField(max_length=16, choices=WindowKind.choices)
    source_system = models.CharField(max_length=64)
    at = models.DateTimeField()

    class Meta:
        db_table = "guardrails_window_event"
        indexes = [models.Index(fields=["kind", "source_system", "at"])]

    def __str__(self) -> str:
        return f"{self.kind} on {self.source_system} at {self.at.isoformat()}"


class HeldStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


class HeldDelete(models.Model):
    """A delete the instance holds for an operator. The record is hidden meanwhile."""

    id = models.BigAutoField(primary_key=True)
    record_type = models.CharField(max_length=64)
    pg_row_id = models.UUIDField()
    external_id = models.CharField(max_length=255, null=True, blank=True)
    source_system = models.CharField(max_length=64)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=16, choices=HeldStatus.choices, default=HeldStatus.PENDING)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True, default="")
    process_run_id = models.CharField(max_length=64, blank=True, default="")
    process_step = models.CharField(max_length=255, blank=True, default="")

    class Meta:
        db_table = "guardrails_held_delete"
        verbose_name = "held delete"
        constraints = [
            models.UniqueConstraint(
                fields=["pg_row_id"],
                condition=models.Q(status=HeldStatus.PENDING),
                name="held_delete_one_pending",
            )
        ]

    def __str__(self) -> str:
        return f"delete {self.record_type} {self.external_id or self.pg_row_id} ({self.status})"


class Guardrail(HeldDelete):
    """The operator's screen, Compliance → Guardrails: held deletes to approve or reject."""

    class Meta:
        proxy = True
        verbose_name = "held delete"
        verbose_name_plural = "guardrails"
