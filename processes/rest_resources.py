"""``process_run``, ``process_run_step`` and ``event`` as PostgREST resources of ``/v1/rest``.

Scoped by the same row-level security as ``GET /v1/processes/runs/:runId``: the invoker sees their
runs and those runs' ledger rows, an administrator every one; a sender sees the events they sent.
Importing this module registers them (``ProcessesConfig.ready`` imports it, the Django idiom for
signal modules).
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import QuerySet

from processes.events.service import events_visible
from processes.models import ProcessRunStep
from processes.steering import runs_visible
from records.rest.resources import Column, ColumnKind, Resource, resource_register

K = ColumnKind

RUN_COLUMNS = (
    Column("run_id", "run_id", K.UUID),
    Column("process_id", "process_id", K.TEXT),
    Column("mode", "mode", K.TEXT),
    Column("state", "state", K.TEXT),
    Column("reason", "reason", K.TEXT),
    Column("outstanding", "outstanding", K.INTEGER),
    Column("pending_reason", "pending_reason", K.TEXT),
    Column("invoked_by", "invoked_by_id", K.INTEGER),
    Column("schedule_name", "schedule_name", K.TEXT),
    # What started a triggered run: record:<process>:<pgRowId>:<syncVersion>, event:<process>:<eventId>.
    Column("idempotency_key", "idempotency_key", K.TEXT),
    Column("input", "input", K.JSON),
    Column("module_version", "module_version", K.INTEGER),
    Column("started_at", "started_at", K.DATETIME),
    Column("finished_at", "finished_at", K.DATETIME),
    Column("slices", "slices", K.INTEGER),
    Column("writes", "writes", K.INTEGER),
    Column("redrives", "redrives", K.INTEGER),
    Column("refusal_code", "refusal_code", K.TEXT),
    Column("refusal_field", "refusal_field", K.TEXT),
    Column("created_at", "created_at", K.DATETIME),
    Column("updated_at", "updated_at", K.DATETIME),
)

STEP_COLUMNS = (
    Column("id", "id", K.INTEGER),
    Column("run_id", "run_id", K.UUID),
    Column("sequence", "sequence", K.INTEGER),
    Column("step_id", "step_id", K.TEXT),
    Column("record_type", "record_type", K.TEXT),
    Column("action", "action", K.TEXT),
    Column("pg_row_id", "pg_row_id", K.UUID),
    Column("external_id", "external_id", K.TEXT),
    Column("disposition", "disposition", K.TEXT),
    Column("row_key", "row_key", K.TEXT),
    Column("slice", "slice", K.INTEGER),
    Column("visit", "visit", K.INTEGER),
    # A failed attempt a redrive set aside (its number); 0 on every row that counts.
    Column("superseded", "superseded", K.INTEGER),
    Column("refusal_code", "refusal_code", K.TEXT),
    Column("refusal_field", "refusal_field", K.TEXT),
    Column("refusal_message", "refusal_message", K.TEXT),
    Column("answer", "answer", K.JSON),
    Column("created_at", "created_at", K.DATETIME),
    Column("updated_at", "updated_at", K.DATETIME),
)


EVENT_COLUMNS = (
    Column("event_id", "event_id", K.UUID),
    Column("name", "name", K.TEXT),
    Column("data", "data", K.JSON),
    Column("key", "key", K.TEXT),
    Column("sender", "sender_id", K.INTEGER),
    Column("received_at", "received_at", K.DATETIME),
    Column("resumed", "resumed", K.INTEGER),
    Column("run_ids", "run_ids", K.JSON),
)


def steps_visible(user: User) -> QuerySet[ProcessRunStep]:
    """Ledger rows of the runs the user may see."""
    steps = ProcessRunStep.objects.all()
    return steps if user.is_staff else steps.filter(run__in=runs_visible(user))


resource_register(
    Resource(
        name="process_run",
        columns=RUN_COLUMNS,
        rows_visible=runs_visible,
        order_default=("created_at",),
        tiebreaker="run_id",
    )
)
resource_register(
    Resource(
        name="process_run_step",
        columns=STEP_COLUMNS,
        rows_visible=steps_visible,
        order_default=("run_id", "sequence"),
        tiebreaker="id",
    )
)
resource_register(
    Resource(
        name="event",
        columns=EVENT_COLUMNS,
        rows_visible=events_visible,
        order_default=("received_at",),
        tiebreaker="event_id",
    )
)
