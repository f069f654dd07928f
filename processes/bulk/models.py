"""A bulk action over runs: what it does, to which runs (fixed at its preview), who asked, who
approved, and how far it got."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class BulkVerb(models.TextChoices):
    CANCEL = "cancel"
    RETRY = "retry"
    RESUME = "resume"


class BulkState(models.TextChoices):
    PREVIEWED = "previewed"  # counted; nothing changed yet
    AWAITING_APPROVAL = "awaiting_approval"  # over steer.approval_over: another administrator
    RUNNING = "running"  # a worker is steering its runs, a batch at a time
    DONE = "done"
    REJECTED = "rejected"


class BulkOutcome(models.TextChoices):
    """What became of one run of a bulk action."""

    DONE = "done"  # steered
    SKIPPED = "skipped"  # ended or moved since the preview, or no longer the requester's
    FAILED = "failed"  # the verb refused it otherwise


class BulkAction(models.Model):
    bulk_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    action = models.CharField(max_length=8, choices=BulkVerb.choices)
    filter = models.JSONField(default=dict)  # as the requester sent it
    run_ids = models.JSONField(default=list)  # the runs the preview counted, in order
    count = models.PositiveIntegerField(default=0)
    # Not a run's state (``processes.status`` moves those): the bulk action's own, its ``state``
    # in the API.
    status = models.CharField(max_length=20, choices=BulkState.choices, default=BulkState.PREVIEWED)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.TextField(blank=True, default="")  # a rejection's
    # Progress: runs steered, skipped (finished since, or no longer in a state the verb takes),
    # and failed (the verb refused them otherwise); each run is counted once.
    position = models.PositiveIntegerField(default=0)
    runs_done = models.PositiveIntegerField(default=0)
    runs_skipped = models.PositiveIntegerField(default=0)
    runs_failed = models.PositiveIntegerField(default=0)
    skips = models.JSONField(default=list)  # [{runId, state, why}], the first 100
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "process_bulk_action"
        indexes = [models.Index(fields=["status", "created_at"])]

    def __str__(self) -> str:
        return f"{self.action} of {self.count} runs ({self.status})"
