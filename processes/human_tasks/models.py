"""Human tasks: a step that waits for a person (``{ id, task: { assignee, title, … } }``).

A task is made by the run's delivery when it reaches the step (one per run and step: the unique
constraint makes a re-delivery find it rather than make another) and decided once — completed,
rejected, expired at its timeout, or closed because its run ended first — by one conditional
UPDATE from ``open`` (``human_tasks.service``). The run parks meanwhile (``awaitingAction``) and
holds no worker; the decision wakes it and the step's ledger row is written from the task.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

GROUP_PREFIX = (
    "group:"  # ``assignee: 'group:finance'``: anyone in the Django auth group ``finance``
)


class TaskState(models.TextChoices):
    OPEN = "open"
    COMPLETED = "completed"
    REJECTED = "rejected"
    EXPIRED = "expired"  # its timeout came before anyone decided
    # its run ended (cancelled, failed, or stopped with the step outstanding) before anyone
    # decided; a stopped run that is resumed opens it again
    CANCELLED = "cancelled"


class HumanTask(models.Model):
    task_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    run = models.ForeignKey("processes.ProcessRun", on_delete=models.CASCADE, related_name="tasks")
    process_id = models.CharField(max_length=200)
    step_id = models.CharField(max_length=255)  # the ledger id ('approve', 'legs:2:approve')
    # As the process wrote it: a username, or 'group:<name>'.
    assignee = models.CharField(max_length=160)
    title = models.CharField(max_length=500)
    details = models.JSONField(null=True, blank=True)
    state = models.CharField(max_length=16, choices=TaskState.choices, default=TaskState.OPEN)
    # What the person answered (completed): the step's ``ctx.steps[id].output``.
    output = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True, default="")  # why it was rejected, expired or closed
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)  # ``timeout``; none: it waits on
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "process_task"
        verbose_name = "task"
        constraints = [
            models.UniqueConstraint(fields=["run", "step_id"], name="process_task_run_step_unique")
        ]
        indexes = [models.Index(fields=["assignee", "state", "created_at"])]

    def __str__(self) -> str:
        return f"{self.title} ({self.state})"

    @property
    def is_group(self) -> bool:
        return self.assignee.startswith(GROUP_PREFIX)
