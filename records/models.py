"""The record store, the outbound write state, and the write trail."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from records.door import DoorGuarded


class SyncState(models.TextChoices):
    LOCAL = "local"  # app-owned type: no connected system
    PENDING = "pending"  # written here, on its way to the source
    SYNCED = "synced"  # the source confirmed it
    PARKED = "parked"  # the source refused it; the reason is on the write state
    SETTLE_CONFLICT = "settle_conflict"  # created upstream, link back failed
    DELETE_HELD = "delete_held"  # hidden, waiting for an operator
    DELETING = "deleting"  # hidden, delete on its way to the source
    DELETED = "deleted"  # gone here and upstream (tombstone keeps the key and trail)


HIDDEN_STATES = (SyncState.DELETE_HELD, SyncState.DELETING, SyncState.DELETED)


# django-stubs sometimes cannot build the reverse manager of a model whose default manager is made
# by from_queryset() on an abstract base (records/door.py): only in an incremental run, from its
# cache, so the ignore may also be unused. Nothing uses record.write_states.
class Record(DoorGuarded):  # type: ignore[django-manager-missing, unused-ignore]
    """A record; written only through the door (``records/door.py``), read through ``Record.reads``."""

    pg_row_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    record_type = models.CharField(max_length=64)
    fields = models.JSONField(default=dict)
    lines = models.JSONField(default=list)
    external_id = models.CharField(max_length=255, null=True, blank=True)
    source_system = models.CharField(max_length=64, blank=True, default="")
    sync_version = models.PositiveIntegerField(default=1)
    sync_state = models.CharField(max_length=20, choices=SyncState.choices)
    synced_at = models.DateTimeField(null=True, blank=True)
    # DO_NOTHING: Django's deletion collector would null these with an UPDATE outside the door.
    # A user or group being deleted releases its records first, through the door and audited
    # (``records.releases``); the database's foreign key still refuses any other way round.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        related_name="+",
    )
    group = models.ForeignKey(
        "auth.Group", null=True, blank=True, on_delete=models.DO_NOTHING, related_name="+"
    )
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta(DoorGuarded.Meta):
        db_table = "record"
        # Every index is paid on every create: owner is indexed by its foreign key once, and the
        # key's uniqueness is a constraint (unique=True would add a LIKE index nobody reads).
        indexes = [
            models.Index(fields=["record_type", "created_at"]),
            models.Index(fields=["record_type", "external_id"]),
        ]
        constraints = [
            models.UniqueConstraint(fields=["idempotency_key"], name="record_idempotency_key"),
            models.UniqueConstraint(
                fields=["record_type", "source_system", "external_id"],
                condition=models.Q(external_id__isnull=False)
                & ~models.Q(sync_state=SyncState.DELETED),
                name="record_external_id_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.record_type} {self.external_id or self.pg_row_id}"

    @property
    def is_hidden(self) -> bool:
        return self.sync_state in HIDDEN_STATES


class WriteOperation(models.TextChoices):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"


class WriteStatus(models.TextChoices):
    HELD = "held"  # a delete waiting for an operator; not sent
    PENDING = "pending"  # queued for the source, in order
    CONFIRMED = "confirmed"
    REFUSED = "refused"  # parked with the source's sentence
    SETTLE_CONFLICT = "settle_conflict"  # applied upstream, link back failed
    SETTLED = "settled"  # a settle conflict resolved by the settle verb
    CANCELLED = "cancelled"  # a held delete rejected, or superseded


class RecordWriteState(DoorGuarded):
    """One outbound write of one record. The id orders writes of one record type."""

    id = models.BigAutoField(primary_key=True)
    record = models.ForeignKey(Record, on_delete=models.CASCADE, related_name="write_states")
    record_type = models.CharField(max_length=64)
    source_system = models.CharField(max_length=64)
    operation = models.CharField(max_length=10, choices=WriteOperation.choices)
    status = models.CharField(max_length=20, choices=WriteStatus.choices)
    payload = models.JSONField(default=dict)  # the fields this write sends
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    reason_code = models.CharField(max_length=64, blank=True, default="")
    field = models.CharField(max_length=128, blank=True, default="")
    message = models.TextField(blank=True, default="")
    external_id = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta(DoorGuarded.Meta):
        db_table = "record_write_state"
        indexes = [models.Index(fields=["record_type", "status", "id"])]

    def __str__(self) -> str:
        return f"{self.operation} {self.record_type} #{self.id} {self.status}"


class TrailOutcome(models.TextChoices):
    ALLOWED = "allowed"
    DUPLICATE = "duplicate"  # an idempotency key already used: nothing written
    REFUSED = "refused"
    HELD = "held"
    APPROVED = "approved"
    REJECTED = "rejected"
    SETTLED = "settled"


class TrailAction(models.TextChoices):
    """What a trail row's decision was about: one of the write operations, or a settle."""

    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    SETTLE = "settle"


class WriteTrail(DoorGuarded):
    """One row per boundary decision: who, what, on which record, with what outcome, and why."""

    id = models.BigAutoField(primary_key=True)
    at = models.DateTimeField(auto_now_add=True)
    # Who, as plain columns: no foreign key, so deleting the user never rewrites a trail row, and
    # the name is the one the actor had when the row was written. User ids are never reused.
    actor_id = models.IntegerField(null=True, blank=True, db_index=True)
    actor_name = models.CharField(max_length=150, blank=True, default="")
    action = models.CharField(max_length=16, choices=TrailAction.choices)
    record_type = models.CharField(max_length=64)
    pg_row_id = models.UUIDField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=TrailOutcome.choices)
    code = models.CharField(max_length=64, blank=True, default="")
    field = models.CharField(max_length=128, blank=True, default="")
    message = models.TextField(blank=True, default="")
    process_run_id = models.CharField(max_length=64, blank=True, default="")
    process_step = models.CharField(max_length=255, blank=True, default="")

    class Meta(DoorGuarded.Meta):
        db_table = "write_trail"
        indexes = [models.Index(fields=["record_type", "at"]), models.Index(fields=["pg_row_id"])]
