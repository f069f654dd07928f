"""Redrive: carry a failed run on as the same run from the step that failed.

The steps that committed keep their records and ledger rows; the walk skips them as it skips any
recorded step (``ChainRunner.recorded``), so they are not run again. The failed step's ledger row
is set aside (``superseded`` = the redrive's number: kept in the history, read by no walk), the
rows the failure wrote for steps never reached are dropped (as a resume drops them), and the run
goes back on its lane. A migration's failed slice is opened again: its finished rows are skipped,
the failed row resumes at its failed step, and the rows after it run as they would have.

The failed step and those after it run on the version the caller chose: the run's own
(``current``) or the newest deployed (``latest``). Records the run's committed steps wrote and
someone changed since are named in the answer (``changedSince``); the redrive goes on regardless
— every step reads records fresh.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from extensions.store import module_version
from kernel.audit import audit_record
from processes.audit import ProcessAuditAction
from processes.catalog import process_module_get
from processes.engine.statuses import StepKind
from processes.errors import RedriveInvalid, RunNotRedrivable
from processes.human_tasks.models import HumanTask, TaskState
from processes.invoke import input_check, switch_check
from processes.lanes import lane_enqueue
from processes.models import (
    Disposition,
    PendingReason,
    ProcessRun,
    ProcessRunSlice,
    ProcessRunStep,
    SkipReason,
)
from processes.status import MOVES, RunMove, states_from
from processes.steering import run_get
from records.models import TrailAction, TrailOutcome, WriteTrail

# Record ids per trail look-up: well under SQLite's bound on a statement's parameters.
CHANGED_LOOKUP_CHUNK = 500


class RedriveVersion(StrEnum):
    CURRENT = "current"  # the version the run was on when it failed
    LATEST = "latest"  # the newest deployed version of the process


@dataclass(frozen=True)
class Redriven:
    run: ProcessRun
    changed_since: list[dict[str, str]]


def redrive_body_parse(body: Any) -> RedriveVersion:
    """``{version?: 'current' | 'latest'}`` (no body: current); 400 naming the field otherwise."""
    if body in (None, ""):
        return RedriveVersion.CURRENT
    if not isinstance(body, dict):
        raise RedriveInvalid("the body must be a JSON object", field="body")
    unknown = sorted(set(body) - {"version"})
    if unknown:
        raise RedriveInvalid(f"a redrive takes only version, not {unknown[0]!r}", field=unknown[0])
    version = body.get("version", RedriveVersion.CURRENT)
    if version not in list(RedriveVersion):
        raise RedriveInvalid(
            f"version must be 'current' or 'latest', not {version!r}", field="version"
        )
    return RedriveVersion(version)


def run_redrive(
    *, user: User, run_id: str, version: RedriveVersion = RedriveVersion.CURRENT
) -> Redriven:
    """Put a failed run back on its lane at the step that failed, on ``version``: audited, counted
    on the run (``redrives``). 404 for a run the caller cannot see; 409 naming the state for a run
    that is not failed, or whose rollback undid its steps; 409 when the process is switched off."""
    run = run_get(user=user, run_id=run_id)
    with transaction.atomic():
        run = ProcessRun.objects.select_for_update().get(pk=run.pk)
        _redrivable_check(run)
        switch_check(run.process_id)
        chosen = _version_chosen(run, version)
        number = run.redrives + 1
        changed = changed_since(run)
        failed = _failed_set_aside(run, number)
        if failed is not None and failed.row_key:
            # A migration's failed slice works through its rows again from the failed one.
            ProcessRunSlice.objects.filter(run=run, number=failed.visit).update(
                is_open=True, finished_at=None, module_version=chosen
            )
        before = {"state": run.state, "moduleVersion": run.module_version}
        _requeue(run, chosen=chosen, number=number)
        audit_record(
            actor=user,
            action=ProcessAuditAction.RUN_REDRIVEN,
            target=f"run:{run.pk}",
            before=before,
            after={"moduleVersion": chosen, "redrive": number, "changedSince": changed},
        )
        lane_enqueue(run_id=run.pk, delivery=run.delivery, mode=run.mode)
    return Redriven(run=run, changed_since=changed)


def _redrivable_check(run: ProcessRun) -> None:
    if run.state not in states_from(RunMove.REDRIVE):
        raise RunNotRedrivable(
            f"only a failed run can be redriven; this run is {run.state}",
            runId=str(run.pk),
            state=run.state,
        )
    landed = (
        run.ledger.filter(
            sequence=run.failed_sequence, superseded=0, created_record=True, pg_row_id__isnull=False
        ).first()
        if run.failed_sequence is not None
        else None
    )
    if landed is not None:
        # Its record exists under the step's key (the source refused it afterwards): running the
        # step again would answer with that refused record instead of writing a new one.
        raise RunNotRedrivable(
            f"step {landed.step_id!r} created {landed.record_type} {landed.pg_row_id} before it "
            "failed (the source refused it): redriving would reuse that record; fix the record "
            "and retry the run instead",
            runId=str(run.pk),
            state=run.state,
        )
    if run.ledger.filter(disposition=Disposition.ROLLED_BACK).exists():
        raise RunNotRedrivable(
            "this run's rollback undid its committed steps, so there is nothing to carry on "
            "from: retry it instead",
            runId=str(run.pk),
            state=run.state,
        )


def _version_chosen(run: ProcessRun, version: RedriveVersion) -> int:
    """The version the rest of the run takes. ``latest`` must still be what the run is — a
    migration or a chain — and take the run's input (400 ``invalid_input`` otherwise)."""
    if version == RedriveVersion.CURRENT:
        return run.module_version
    module = process_module_get(run.process_id)  # read now, not the worker's 30 s cache
    was_migration = module_version(run.process_id, run.module_version).definition.get("eachRow")
    if (module.definition.get("eachRow") is None) != (was_migration is None):
        kind = "a migration" if was_migration is not None else "a chain"
        raise RedriveInvalid(
            f"version {module.version} of {run.process_id} is no longer {kind}, as this run is: "
            "redrive it on version current",
            field="version",
        )
    input_check(module.definition.get("input") or {}, run.input)
    return module.version


def _failed_set_aside(run: ProcessRun, number: int) -> ProcessRunStep | None:
    """Set the failed step's row aside and drop the not-reached rows the failure wrote; answers
    the failed row (None when the run failed before any step, e.g. an engine fault)."""
    failed = None
    if run.failed_sequence is not None:
        failed = run.ledger.filter(sequence=run.failed_sequence, superseded=0).first()
    if failed is not None:
        ProcessRunStep.objects.filter(pk=failed.pk).update(superseded=number)
        if failed.action == StepKind.TASK:
            # A rejected or expired task is asked again: closed here, the engine opens it again
            # with its timeout counted from now (as for a resumed run). The decision stays on
            # the set-aside row and in the audit trail.
            decided = Q(state=TaskState.REJECTED) | Q(state=TaskState.EXPIRED)
            HumanTask.objects.filter(decided, run_id=run.pk, step_id=failed.step_id).update(
                state=TaskState.CANCELLED, reason=f"asked again by redrive {number}"
            )
    run.ledger.filter(skip_reason=SkipReason.NOT_REACHED, superseded=0).delete()
    return failed


def _requeue(run: ProcessRun, *, chosen: int, number: int) -> None:
    """Queued again, as a fresh delivery. ``started_at`` and ``worked_ms`` are kept: as for a
    resume (seed: "the clock stays the run's"), a redrive cannot buy a run more working time than
    the maximum runtime."""
    ProcessRun.objects.filter(pk=run.pk, state__in=states_from(RunMove.REDRIVE)).update(
        state=MOVES[RunMove.REDRIVE].target,
        pending_reason=PendingReason.QUEUED,
        reason=None,
        finished_at=None,
        failed_sequence=None,
        transient_attempts=0,
        module_version=chosen,
        redrives=number,
        delivery=F("delivery") + 1,
        updated_at=timezone.now(),
    )
    run.refresh_from_db()


def changed_since(run: ProcessRun) -> list[dict[str, str]]:
    """The records the run's committed steps wrote that someone else changed or deleted after
    the last of those steps wrote them (their write trail), as ``{recordType, pgRowId, stepId}``."""
    # pg_row_id -> (record type, step, when the run last wrote it): the run's own later writes
    # are not someone's change. Plain rows: a migration's ledger may hold many thousands.
    last: dict[Any, tuple[str, str, datetime]] = {}
    written = run.ledger.filter(
        superseded=0, disposition=Disposition.CONFIRMED, counts_write=True, pg_row_id__isnull=False
    ).order_by("sequence")
    for pg_row_id, record_type, step_id, at in written.values_list(
        "pg_row_id", "record_type", "step_id", "created_at"
    ):
        last[pg_row_id] = (record_type, step_id, at)
    ids = list(last)
    changed: set[Any] = set()
    for start in range(0, len(ids), CHANGED_LOOKUP_CHUNK):
        trail = (
            WriteTrail.reads.filter(
                pg_row_id__in=ids[start : start + CHANGED_LOOKUP_CHUNK],
                action__in=(TrailAction.UPDATE, TrailAction.DELETE),
                outcome__in=(TrailOutcome.ALLOWED, TrailOutcome.APPROVED),
            )
            .exclude(process_run_id=str(run.pk))
            .values_list("pg_row_id", "at")
        )
        changed.update(pg_row_id for pg_row_id, at in trail if at > last[pg_row_id][2])
    return [
        {"recordType": record_type, "pgRowId": str(pg_row_id), "stepId": step_id}
        for pg_row_id, (record_type, step_id, _) in last.items()
        if pg_row_id in changed
    ]
