"""What every step kind shares: where a step runs (``StepScope``), what it did (``StepResult``), and
its ledger row (``record_step``, ``step_refused``). The kinds (``ai_step``, ``sleep_step``,
``task_step``, ``wait_step``, ``grouped_steps``) and ``steps`` import this; it imports none of them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from django.db import IntegrityError, models, transaction

from processes.engine.grouping import RideGroup
from processes.engine.lease import Lease
from processes.engine.ledger import Refused, ledger_write
from processes.engine.plan import PlannedStep
from processes.engine.runtime import StepCodeFailed
from processes.engine.statuses import StepStatus
from processes.models import Disposition, ProcessRun, ProcessRunStep
from records.trail import Actor
from records.units import WriteUnit


@dataclass(frozen=True)
class StepResult:
    """What the step did (``StepStatus``) and, unless it waits, its ledger row."""

    status: StepStatus
    row: ProcessRunStep | None = None
    cap: str | None = None
    retry_at: datetime | None = None
    task: Any = None  # the open HumanTask a task step waits on (WAIT_ACTION)
    event_wait: Any = None  # the open EventWait a waitFor step waits on (WAIT_INPUT)
    attempts: int = 0  # the provider questions that failed transiently so far (WAIT_RETRY)

    @property
    def ledger_row(self) -> ProcessRunStep:
        """The row the step wrote (every status but a wait on the delete window)."""
        if self.row is None:
            raise AssertionError(f"a {self.status} step wrote no ledger row")
        return self.row


@dataclass(frozen=True)
class StepScope:
    """Where the step runs: the run, its ledger position, and the key its writes carry."""

    run: ProcessRun
    actor: Actor
    idempotency_key: str
    row_key: str = ""
    slice_number: int = 1
    visit: int = 1
    lease: Lease | None = None  # the delivery's; every ledger row proves it in its transaction
    started_at: datetime | None = None  # when the step began: its ledger row's started_at
    # Told the step's outcome (``ctx.steps[id]``) once its write is done, before its ledger row
    # and commit: the runner starts the next step's first function then (``call_ahead``).
    ahead: Callable[[dict[str, Any]], None] | None = None
    # The delivery's ride group (``engine.grouping``): a create that can ride joins it.
    rides: RideGroup | None = None
    # The id a riding create's record takes: chosen when a later step's build was sent ahead
    # with this step's outcome (``ChainRunner.ahead``); else chosen by the create.
    pg_row_id: uuid.UUID | None = None


def record_step(scope: StepScope, planned: PlannedStep, **fields: Any) -> ProcessRunStep:
    """The step's ledger row at its place in the run (inside the caller's transaction)."""
    return ledger_write(scope.run, planned, lease=scope.lease, **step_placed(scope), **fields)


def step_placed(scope: StepScope) -> dict[str, Any]:
    """Where the step's ledger row stands in the run, and when the step began."""
    return {
        "row_key": scope.row_key,
        "slice_number": scope.slice_number,
        "visit": scope.visit,
        "started_at": scope.started_at,
    }


def step_settle(scope: StepScope) -> None:
    """Write the steps waiting in the ride group before this step writes anything."""
    if scope.rides is not None:
        scope.rides.flush()


def step_refused(
    scope: StepScope, planned: PlannedStep, unit: WriteUnit, exc: Exception
) -> StepResult:
    """The boundary refused: the step's transaction rolled back whole (no savepoint was paid for on
    the way); the refusal's trail row and the failed ledger row are written in a fresh one."""
    step_settle(scope)
    with transaction.atomic():
        unit.refusals_trail()
        row = record_step(scope, planned, disposition=Disposition.FAILED, refusal=Refused.of(exc))
        return StepResult(StepStatus.FAILED, row)


Waited = TypeVar("Waited", bound=models.Model)


def step_wait_open(
    scope: StepScope,
    planned: PlannedStep,
    model: type[Waited],
    *,
    field: str,
    describe: Callable[[], dict[str, Any]],
) -> Waited | StepResult:
    """A waiting step's first delivery (a task, a waitFor): the ``model`` row it waits on, keyed by
    (run, step), with the fields ``describe`` answers from the author's functions. When they fail
    (``StepCodeFailed``) the step fails, its refusal naming ``field``; a row another delivery made
    first is the row."""
    try:
        fields = describe()
    except StepCodeFailed as exc:
        with transaction.atomic():
            row = record_step(
                scope,
                planned,
                disposition=Disposition.FAILED,
                refusal=Refused(exc.code, field, exc.message),
            )
        return StepResult(StepStatus.FAILED, row)
    manager = model._default_manager
    try:
        with transaction.atomic():
            if scope.lease is not None:
                scope.lease.hold()  # a delivery that lost the run makes nothing to wait on
            return manager.create(run=scope.run, step_id=planned.step_id, **fields)
    except IntegrityError:  # another delivery made it first: that one is the row
        return manager.get(run_id=scope.run.pk, step_id=planned.step_id)
