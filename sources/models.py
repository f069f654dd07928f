"""The outbound lanes, and the sandbox source's own state (its script, counters, documents, send log)."""

from __future__ import annotations

from django.db import models


class SourceLane(models.Model):
    """One row per record type: whoever holds it is the only sender of that type right now.

    Taken with a conditional UPDATE (free, or lease run out) so it works the same on SQLite and
    PostgreSQL; the lease bounds how long a crashed worker can block its type.
    """

    record_type = models.CharField(max_length=64, unique=True)
    holder = models.CharField(max_length=64, blank=True, default="")
    lease_until = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "source_lane"

    def __str__(self) -> str:
        return f"{self.record_type} lane ({self.holder or 'free'})"


class SourcePace(models.Model):
    """One row per connected source: its rate slot and its backoff, shared by every worker.

    Every pacing decision first touches this row with an UPDATE (a row lock on PostgreSQL, the
    write lock on SQLite), so two workers never both take the same slot. ``next_slot_at`` is the
    earliest a next write may start (a token bucket of depth one: writes are spaced 1/rate
    apart); ``paced_until`` is set when the source asked us to slow down (429/503 Retry-After,
    a timeout) and holds back every write to it until then.
    """

    source = models.CharField(max_length=64, unique=True)
    next_slot_at = models.DateTimeField(null=True, blank=True)
    paced_until = models.DateTimeField(null=True, blank=True)
    backoffs = models.PositiveIntegerField(default=0)  # slow-downs in a row (the exponent)
    last_reason = models.CharField(max_length=255, blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "source_pace"

    def __str__(self) -> str:
        return f"pace of {self.source}"


class SourceInFlight(models.Model):
    """A write handed to a source and not yet answered; counted for ``max_in_flight``.

    A row per send rather than a counter, so a worker that dies mid-send frees its place when
    its lease runs out instead of holding it forever.
    """

    source = models.CharField(max_length=64, db_index=True)
    holder = models.CharField(max_length=64, unique=True)
    lease_until = models.DateTimeField()

    class Meta:
        db_table = "source_in_flight"

    def __str__(self) -> str:
        return f"{self.holder} in flight to {self.source}"


class SandboxScript(models.Model):
    """How the sandbox source misbehaves for one record type (tests and demos).

    ``operation`` blank means every operation. Order of effect: latency, never answer, transient
    failures (counted down), refusal, then the simulation proper; ``settle_conflict`` applies the
    write upstream and then reports that the link back failed.
    """

    record_type = models.CharField(max_length=64, unique=True)
    operation = models.CharField(max_length=10, blank=True, default="")
    latency_ms = models.PositiveIntegerField(default=0)
    refuse_code = models.CharField(max_length=64, blank=True, default="")
    refuse_field = models.CharField(max_length=128, blank=True, default="")
    refuse_message = models.TextField(blank=True, default="")
    transient_failures = models.PositiveIntegerField(default=0)
    never_answer = models.BooleanField(default=False)
    settle_conflict = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "sandbox_script"

    def __str__(self) -> str:
        return f"sandbox script for {self.record_type}"


class SandboxCounter(models.Model):
    """The next document number per id prefix (``PO`` → 1041 gives ``PO-1041``); survives restarts."""

    prefix = models.CharField(max_length=32, unique=True)
    next_number = models.PositiveBigIntegerField(default=1041)

    class Meta:
        db_table = "sandbox_counter"

    def __str__(self) -> str:
        return f"next {self.prefix}-{self.next_number}"


class SandboxDocument(models.Model):
    """A document as the simulated system holds it."""

    external_id = models.CharField(max_length=255, unique=True)
    # The key the create carried (``OutboundWrite.idempotency_key``): a create re-sent with the
    # same key gets this document back instead of a second one, as a real source's would.
    idempotency_key = models.CharField(max_length=255, null=True, blank=True, unique=True)
    record_type = models.CharField(max_length=64)
    fields = models.JSONField(default=dict)
    lines = models.JSONField(default=list)
    is_deleted = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "sandbox_document"

    def __str__(self) -> str:
        return f"{self.record_type} {self.external_id}"


class SandboxSend(models.Model):
    """One write as it reached the sandbox: when, in what order, and how many of its type were in flight."""

    record_type = models.CharField(max_length=64)
    write_state_id = models.BigIntegerField()
    operation = models.CharField(max_length=10)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    # Writes of this type in flight when this one began, itself included.
    in_flight = models.PositiveIntegerField()
    outcome = models.CharField(max_length=20, blank=True, default="")
    external_id = models.CharField(max_length=255, null=True, blank=True)
    worker_pid = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "sandbox_send"
        indexes = [models.Index(fields=["record_type", "id"])]

    def __str__(self) -> str:
        return f"{self.operation} {self.record_type} (write {self.write_state_id})"


class SandboxInFlight(models.Model):
    """Writes of one type the sandbox is handling right now (an honest gauge for the ordering tests)."""

    record_type = models.CharField(max_length=64, unique=True)
    count = models.IntegerField(default=0)

    class Meta:
        db_table = "sandbox_in_flight"

    def __str__(self) -> str:
        return f"{self.count} {self.record_type} in flight"
