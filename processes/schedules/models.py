"""Schedules: ``turbobase/schedules.json`` entries deployed with a bundle (issue 5).

A schedule invokes one process with nobody signed in. Its rows are written only by a bundle apply
(``extensions.bundle``); the firing loop (``processes.schedules.firing``) claims a due schedule by
moving ``next_fire_at`` with a conditional UPDATE, so two tickers never fire one due time twice,
and records every firing as a ``ProcessScheduleFiring`` keyed by (schedule, due time).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ScheduleKind(models.TextChoices):
    CRON = "cron"


class ProcessSchedule(models.Model):
    """A cron schedule that invokes one process with nobody signed in."""

    name = models.CharField(max_length=200, primary_key=True)
    schedule_kind = models.CharField(
        max_length=16, choices=ScheduleKind.choices, default=ScheduleKind.CRON
    )
    schedule_expr = models.CharField(max_length=200)
    schedule_tz = models.CharField(max_length=64, default="UTC")
    # Denormalised from body.process: the remove guard and the trigger read look it up by id.
    process_id = models.CharField(max_length=200, db_index=True)
    # The entry's body as deployed ({kind, process, input?}); whether ``input`` was given at all
    # matters (left out, the run gets {}), so the body is kept whole rather than split.
    body = models.JSONField()
    next_fire_at = models.DateTimeField(null=True, blank=True, db_index=True)
    last_fired_at = models.DateTimeField(null=True, blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    is_paused = models.BooleanField(default=False)
    paused_reason = models.TextField(blank=True, default="")
    deployed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "process_schedule"
        app_label = "processes"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_input_given(self) -> bool:
        return isinstance(self.body, dict) and "input" in self.body


class FiringOutcome(models.TextChoices):
    SUCCESS = "success"  # the process run is queued (its own outcome is on the run)
    SKIPPED = "skipped"  # the process or the instance is switched off
    FAILED = "failed"  # nothing queued: the input, or the process, is wrong


class ProcessScheduleFiring(models.Model):
    """One firing of one schedule: the due time it served, what came of it, and the run it queued.

    Keyed by (schedule name, due time), so a due time is recorded at most once. The name is a plain
    column, not a foreign key: the history outlives a schedule that a later deploy removes.
    """

    id = models.BigAutoField(primary_key=True)
    schedule_name = models.CharField(max_length=200)
    due_at = models.DateTimeField()
    fired_at = models.DateTimeField()
    outcome = models.CharField(max_length=16, choices=FiringOutcome.choices)
    run_id = models.UUIDField(null=True, blank=True)
    field = models.CharField(max_length=255, blank=True, default="")
    message = models.TextField(blank=True, default="")

    class Meta:
        db_table = "process_schedule_firing"
        app_label = "processes"
        ordering = ["-due_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["schedule_name", "due_at"], name="schedule_firing_unique"
            ),
        ]
        indexes = [models.Index(fields=["schedule_name", "fired_at"])]

    def __str__(self) -> str:
        return f"{self.schedule_name} @ {self.due_at:%Y-%m-%d %H:%M} {self.outcome}"
