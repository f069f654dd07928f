"""A delivery parking its run on a wait (the source's verdict, a person, an event, the clock, a
retry, the delete window) or failing it at a step: what the runner does when a walk ends there."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from processes.contract import OnFailure
from processes.engine.ending import (
    run_end,
    run_hand_back,
    run_let_go,
    run_redeliver,
    run_wait,
    run_wait_riding,
)
from processes.engine.lease import Lease
from processes.engine.ledger import (
    ledger_skip_rest,
)
from processes.engine.plan import PlannedStep
from processes.engine.rollback import rollback_continue
from processes.engine.statuses import StepKind, WalkStatus
from processes.engine.waits import source_deadline, step_waiting_on, wait_deadline
from processes.engine.wakeups import source_wake
from processes.engine.walks import Walk
from processes.events.models import EventWait, WaitState
from processes.events.service import wait_claim_earlier
from processes.human_tasks.models import HumanTask, TaskState
from processes.models import (
    PendingReason,
    ProcessRun,
    ProcessRunStep,
    RunState,
)
from records.trail import Actor

# The step kinds that leave rows of their own waiting on the run (a task, an event wait), which
# the run's end closes.
OWN_WAITS = frozenset({StepKind.TASK, StepKind.WAIT_FOR})


def plan_waits(plan: list[PlannedStep]) -> bool:
    """Whether ``plan`` has a step that leaves a task or an event wait on the run."""
    return any(planned.kind in OWN_WAITS for planned in plan)


class Parking:
    """The runner's endings of a walk that did not reach the end (a mixin of ``ChainRunner``)."""

    run: ProcessRun
    lease: Lease | None
    definition: dict[str, Any]
    actor: Actor

    def run_set(self, **columns: Any) -> None:
        raise NotImplementedError

    def walk_end(self, walk: Walk, plan: list[PlannedStep]) -> None:
        """A chain's walk ended: end the run, hand it back, park it on its wait, or fail it."""
        if walk.status == WalkStatus.DONE:
            run_end(self.run, RunState.COMMITTED, lease=self.lease, own_waits=plan_waits(plan))
        elif walk.status == WalkStatus.STOP:
            run_end(
                self.run,
                walk.stopped.state,
                lease=self.lease,
                reason=walk.stopped.reason,
                outstanding=len(plan) - walk.position,
            )
        elif walk.status == WalkStatus.HAND_BACK:
            run_hand_back(self.run, lease=self.lease)
        elif walk.status == WalkStatus.WAIT_SOURCE:
            self.wait_source(walk.at, walk.ledger_row, outstanding=len(plan) - walk.position - 1)
        elif walk.status == WalkStatus.WAIT_WINDOW:
            self.wait_window(walk.at, walk.result, plan[walk.position :])
        elif walk.status == WalkStatus.WAIT_ACTION:
            self.wait_action(walk.at, walk.result.task)
        elif walk.status == WalkStatus.WAIT_INPUT:
            self.wait_input(walk.at, walk.result.event_wait)
        elif walk.status == WalkStatus.WAIT_TIME:
            self.wait_time(walk.at, walk.result.retry_at)
        elif walk.status == WalkStatus.WAIT_RETRY:
            self.wait_retry(walk.at, walk.result.retry_at, walk.result.attempts)
        elif walk.status == WalkStatus.FAILED:
            ledger_skip_rest(self.run, plan[walk.position + 1 :], lease=self.lease)
            self.fail(walk.at, walk.ledger_row, outstanding=0)

    def wait_source(self, planned: PlannedStep, row: ProcessRunStep, *, outstanding: int) -> None:
        """Park on the source's verdict for ``row``, or end committed when the wait budget is spent."""
        if self.lease is not None and not self.run.lease_owner:
            return  # the step's own statement parked it (``waits.source_park_riding``)
        now = timezone.now()
        waiting_on = step_waiting_on(row.row_key, planned.step_id)
        deadline = source_deadline(self.run, waiting_on, now)
        if now >= deadline:
            budget_ms = setting_get(SettingKey.PROCESSES_AWAIT_SOURCE_BUDGET_MS)
            run_end(
                self.run,
                RunState.COMMITTED,
                lease=self.lease,
                outstanding=outstanding,
                reason=(
                    f"step {planned.step_id!r} is still waiting for the source's verdict after the wait budget "
                    f"({budget_ms} ms, processes.await_source_budget_ms); its record is kept — "
                    "resume the run to wait again"
                ),
            )
            return
        # A row recorded earlier, its verdict still pending: parked by a statement of its own. The
        # verdict may land while we park (its wake-up finds the run not yet parked): then wake it
        # here — one conditional UPDATE, which a wake-up since parked beat.
        run_wait(
            self.run,
            lease=self.lease,
            pending_reason=PendingReason.AWAITING_SOURCE,
            deadline=deadline,
            wake_at=deadline,
            waiting_step=waiting_on,
        )
        source_wake([self.run.pk], row_pk=row.pk)

    def wait_action(self, planned: PlannedStep, task: HumanTask) -> None:
        """Park until a person decides the step's task; its timeout, if any, is the due time."""
        decided = HumanTask.objects.filter(pk=task.pk).exclude(state=TaskState.OPEN)
        if self._parked_on(planned, PendingReason.AWAITING_ACTION, task.expires_at, decided):
            run_redeliver(self.run.pk)

    def wait_input(self, planned: PlannedStep, wait: EventWait) -> None:
        """Park until a matching event comes; the wait's timeout is the due time (``wake_at``)."""
        claimed = EventWait.objects.filter(pk=wait.pk).exclude(state=WaitState.WAITING)
        if self._parked_on(planned, PendingReason.AWAITING_INPUT, wait.expires_at, claimed):
            run_redeliver(self.run.pk)
        else:
            # Both rows are committed now: an event that came before (since the run was created)
            # is found here; an event sent from now on finds the wait itself.
            wait_claim_earlier(wait)  # claims it with an earlier event and queues the run

    def _parked_on(
        self, planned: PlannedStep, reason: str, wake_at: datetime | None, settled: QuerySet
    ) -> bool:
        """Park on what ``planned`` waits for (due at ``wake_at``), and answer whether it must be
        delivered again at once: what it waits on was ``settled`` (decided, claimed), or the run
        cancelled, while we were parking — that wake-up found the run not yet parked, so nobody
        else will deliver it."""
        cancelled = self._park(pending_reason=reason, wake_at=wake_at, waiting_step=planned.step_id)
        return cancelled or settled.exists()

    def _park(self, **wait: Any) -> bool:
        """Park the run (``ending.wait_columns``'s ``wait``) and answer whether a cancel was asked
        for while we were parking — that cancel found the run still held, so nobody else will
        deliver it. With a lease, one statement: the park rides the lease's proof, which reads
        the cancel request back."""
        if self.lease is None:
            run_wait(self.run, **wait)
            return ProcessRun.objects.filter(pk=self.run.pk, cancel_requested=True).exists()
        changes = run_wait_riding(self.run, self.lease, **wait)
        self.lease.let_go()  # before the statement, as any park: the heartbeat stops renewing
        self.lease.hold(**changes)
        run_let_go(self.run, self.lease, changes)
        return self.lease.cancel_seen

    def wait_time(self, planned: PlannedStep, until: datetime) -> None:
        """Park a sleep step until ``until``: the lane's watch delivers the run then (wake_at)."""
        # A cancel asked for while we were parking found the run still held: end it now.
        if self._park(
            pending_reason=PendingReason.AWAITING_TIME,
            deadline=until,
            wake_at=until,
            waiting_step=planned.step_id,
        ):
            run_redeliver(self.run.pk)

    def wait_retry(self, planned: PlannedStep, until: datetime, attempts: int) -> None:
        """Park ``retrying`` until ``until`` (wake_at), counting the failed attempts on the run."""
        if self._park(
            pending_reason=PendingReason.RETRYING,
            wake_at=until,
            waiting_step=planned.step_id,
            transient_attempts=attempts,
        ):
            run_redeliver(self.run.pk)

    def wait_window(
        self,
        planned: PlannedStep,
        result,
        rest: list[PlannedStep],
        *,
        row_key: str = "",
        visit: int = 1,
        outstanding: int | None = None,
    ) -> None:
        """Park until the delete window frees, or stop committed naming the cap when it will not in time."""
        now = timezone.now()
        budget_ms = setting_get(SettingKey.PROCESSES_DELETE_WAIT_BUDGET_MS)
        waiting_on = step_waiting_on(row_key, planned.step_id)
        deadline = wait_deadline(self.run, waiting_on, now, budget_ms)
        if result.retry_at > deadline:
            ledger_skip_rest(
                self.run, rest, row_key=row_key, slice_number=visit, visit=visit, lease=self.lease
            )
            left = len(rest) if outstanding is None else outstanding
            run_end(
                self.run,
                RunState.COMMITTED,
                lease=self.lease,
                outstanding=left,
                reason=(
                    f"step {planned.step_id!r} stopped on the delete cap {result.cap}: the window would not free "
                    f"within the step's wait budget ({budget_ms} ms); nothing was deleted at that step — invoke "
                    "the process again, or raise the cap in Settings → Write guardrails"
                ),
            )
            return
        run_wait(
            self.run,
            lease=self.lease,
            pending_reason=PendingReason.AWAITING_TIME,
            deadline=deadline,
            wake_at=result.retry_at,
            waiting_step=waiting_on,
        )

    def fail(self, planned: PlannedStep, row: ProcessRunStep, *, outstanding: int) -> None:
        reason = f"step {planned.step_id!r} failed: {row.refusal_code}: {row.refusal_message}"
        if row.row_key:
            reason = f"row {row.row_key!r}: {reason}"
        self.run_set(failed_sequence=row.sequence)
        self.run.failed_sequence = row.sequence
        if self.definition.get("onFailure") == OnFailure.ROLLBACK and not planned.is_keep:
            self.run_set(rollback_requested=True, rollback_cause=reason, outstanding=outstanding)
            self.run.rollback_requested, self.run.rollback_cause = True, reason
            self.run.outstanding = outstanding
            rollback_continue(self.run, self.actor, lease=self.lease)
            return
        run_end(self.run, RunState.FAILED, lease=self.lease, reason=reason, outstanding=outstanding)
