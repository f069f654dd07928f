"""Events: a named fact a person or an app sends (``POST /v1/events``), kept, and the runs that wait
for one (a ``waitFor`` step).

An ``Event`` is stored once per sender and ``key`` (a unique constraint, so two sends of the same
key at once make one event) and never changed but for the bookkeeping of its delivery. An
``EventWait`` is a run parked on a ``waitFor`` step: one per run and step (so a delivery that dies
while parking and is sent again finds it), with the ``match`` its function returned when the run
parked. It leaves ``waiting`` exactly once — to ``received`` (an event claimed it), ``timed_out``
or ``closed`` (its run ended) — by one conditional UPDATE from ``waiting``
(``processes.events.service``).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from processes.events.names import EVENT_NAME_MAX_CHARS

EVENT_KEY_MAX_CHARS = 200


class Event(models.Model):
    event_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=EVENT_NAME_MAX_CHARS)
    data = models.JSONField(default=dict)
    # The sender's idempotency key: the same key again is the same event (per sender).
    key = models.CharField(max_length=EVENT_KEY_MAX_CHARS, null=True, blank=True)
    sender = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    received_at = models.DateTimeField(default=timezone.now)
    # When the waits it matched were claimed; null while that is still to do (a sender that
    # died between storing and delivering: the sweeper, or the same key sent again, finishes it).
    delivered_at = models.DateTimeField(null=True, blank=True)
    resumed = models.PositiveIntegerField(default=0)  # the waits it resumed
    run_ids = models.JSONField(default=list)  # the runs its triggers started, as strings

    class Meta:
        db_table = "process_event"
        constraints = [
            models.UniqueConstraint(
                fields=["sender", "key"],
                condition=Q(key__isnull=False),
                name="process_event_sender_key_unique",
            )
        ]
        indexes = [
            models.Index(fields=["name", "received_at"]),
            models.Index(fields=["sender", "received_at"]),
            models.Index(fields=["received_at", "event_id"], name="process_event_newest"),
            # The sweeper's minute look for events a dead sender left undelivered: rows that
            # are delivered (nearly all) are not in it.
            models.Index(
                fields=["received_at"],
                condition=Q(delivered_at__isnull=True),
                name="process_event_undelivered",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.event_id}"


class WaitState(models.TextChoices):
    WAITING = "waiting"
    RECEIVED = "received"  # an event claimed it: ``event`` says which
    TIMED_OUT = "timed_out"  # its timeout came first
    CLOSED = "closed"  # its run ended (cancelled, stopped) while it waited


class EventWait(models.Model):
    id = models.BigAutoField(primary_key=True)
    run = models.ForeignKey(
        "processes.ProcessRun", on_delete=models.CASCADE, related_name="event_waits"
    )
    step_id = models.CharField(max_length=255)  # the ledger id ('paid', 'legs:2:paid')
    event_name = models.CharField(max_length=EVENT_NAME_MAX_CHARS)
    match = models.JSONField(default=dict)  # what ``match`` returned when the run parked
    # The run's creation: only events received after it count.
    after = models.DateTimeField()
    expires_at = models.DateTimeField()  # ``timeout``: the run's due time while it waits
    state = models.CharField(max_length=16, choices=WaitState.choices, default=WaitState.WAITING)
    event = models.ForeignKey(
        Event, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "process_event_wait"
        constraints = [
            models.UniqueConstraint(fields=["run", "step_id"], name="process_event_wait_unique")
        ]
        indexes = [models.Index(fields=["event_name", "state"])]

    def __str__(self) -> str:
        return f"{self.run_id} {self.step_id} waits for {self.event_name} ({self.state})"
