"""One delivery of a run: claim it, walk its steps from the first unrecorded one, leave it.

A delivery holds the run's lease while it works (``engine.lease``: renewed by a heartbeat, proved
inside every step's transaction). It ends the run, parks it on a wait (and gives the worker back),
or — if the worker dies — leaves a lease that expires so the next delivery (``engine.redelivery``)
resumes at the first unrecorded step. Nothing here writes a record except through the boundary.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import replace
from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from extensions.store import module_served, module_version
from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from processes.ceilings import ceilings_for
from processes.contract import OnRefused
from processes.engine.claim import run_claim
from processes.engine.ending import run_end, run_end_riding, run_end_rode, worked_added
from processes.engine.grouping import LookAhead, RideGroup, RidesUndone, Sent, step_key
from processes.engine.lease import Lease, LeaseLost
from processes.engine.ledger import (
    ledger_seen_empty,
    step_outcome,
)
from processes.engine.migration import MigrationSlice
from processes.engine.parking import Parking, plan_waits
from processes.engine.plan import ForEachCapExceeded, PlannedStep, plan_build
from processes.engine.rollback import rollback_continue
from processes.engine.runtime import ModuleRuntime
from processes.engine.statuses import StepKind, StepStatus, VerdictWait, WalkStatus
from processes.engine.steps import StepScope, step_execute
from processes.engine.stops import BoundaryStops
from processes.engine.waits import verdict_take
from processes.engine.walks import CANCELLED, Place, Stop, Walk
from processes.errors import InputInvalid
from processes.models import (
    Disposition,
    ProcessRun,
    ProcessRunStep,
    RunState,
    SkipReason,
)
from processes.planning import is_planning, planned_outcome
from records.trail import Actor

logger = logging.getLogger("turbobase.processes.engine")


def run_deliver(
    run_id: str,
    delivery: int | None = None,
    *,
    hand_back_at: float | None = None,
    claimed: tuple[ProcessRun, Lease] | None = None,
    switch_read_at: float | None = None,
) -> ProcessRun | None:
    """The lane task: perform one delivery of the run (``delivery``: the number it was queued
    with; a stale one does nothing). ``hand_back_at`` (``time.monotonic()``; a sync run delivered
    on its request): at the first step boundary past it, give the run back to its lane.
    ``claimed``: the run and lease of a run written already claimed (``processes.sync_run``), its
    ledger position known; ``switch_read_at``: when its process's switch was last read on.
    Answers the run as this delivery left it (its ending mirrored on it), None if not claimed."""
    claimed = claimed or run_claim(run_id, delivery)
    if claimed is None:
        return None
    run, lease = claimed
    runner: ChainRunner | None = None
    lease.heartbeat_start()
    try:
        runner = ChainRunner(
            run, lease, hand_back_at=hand_back_at, switch_read_at=switch_read_at
        )  # inside: a run that cannot act (RunInvokerGone) fails below
        runner.execute()
    except LeaseLost:  # another delivery holds the run now; ours rolled back its step
        logger.warning("run %s: delivery gave up, its lease was taken over", run_id)
    except Exception as exc:  # an engine fault ends the run rather than re-delivering it forever
        logger.exception("run %s failed in the engine", run_id)
        run.refresh_from_db()
        if not run.is_terminal:
            with contextlib.suppress(LeaseLost):  # another delivery holds it: that one ends it
                run_end(
                    run,
                    RunState.FAILED,
                    reason=f"engine error: {type(exc).__name__}: {exc}",
                    lease=lease,
                )
    finally:
        lease.heartbeat_stop()
        if runner is not None:
            runner.close()
        # Ending, parking or handing the run back released the lease (mirrored on ``run``):
        # only a delivery that left it otherwise (lost it, an engine fault) frees it here.
        if run.lease_owner:
            lease.owned().update(
                **{
                    **lease.carried,
                    "lease_owner": "",
                    "lease_until": None,
                    "writes": run.writes,
                    **worked_added(lease.worked_take()),
                }
            )
    return run


class RunInvokerGone(RuntimeError):
    """The run's invoker was deleted (the ledger keeps the run): nobody to act for."""


def run_invoker(run: ProcessRun) -> User:
    """The user a run acts as — its invoker, whose access every step's write and read is checked
    against. ``invoked_by`` is nullable only so a deleted account leaves its runs' ledgers behind."""
    if run.invoked_by is None:
        raise RunInvokerGone(
            f"run {run.run_id}: its invoker's account was deleted; nobody to act for"
        )
    return run.invoked_by


# A step that waits hands the walk back with the same kind of wait.
_STEP_WAITS = {
    StepStatus.WAIT_WINDOW: WalkStatus.WAIT_WINDOW,
    StepStatus.WAIT_ACTION: WalkStatus.WAIT_ACTION,
    StepStatus.WAIT_INPUT: WalkStatus.WAIT_INPUT,
    StepStatus.WAIT_TIME: WalkStatus.WAIT_TIME,
    StepStatus.WAIT_RETRY: WalkStatus.WAIT_RETRY,
}


class ChainRunner(Parking):
    """Walks a chain's plan for one delivery."""

    def __init__(
        self,
        run: ProcessRun,
        lease: Lease | None = None,
        *,
        hand_back_at: float | None = None,
        switch_read_at: float | None = None,
    ) -> None:
        self.run = run
        self.lease = lease
        self.hand_back_at = hand_back_at
        self.definition: dict[str, Any] = module_version(
            run.process_id, run.module_version
        ).definition
        self.invoker = run_invoker(run)
        self.actor = Actor(user=self.invoker, process_run_id=str(run.run_id))
        self._runtime: ModuleRuntime | None = None
        self._ended_riding = False  # the last step's statement ended the run (``_last_flush``)
        # A delivery's create steps commit in groups (engine.grouping); a run walked without a
        # lease (no delivery) writes each step alone.
        self.rides = RideGroup(run, lease) if lease is not None else None
        self.look = LookAhead(
            run, self.rides, self.ctx, lambda calls: self.runtime().calls_ahead(calls)
        )
        self.stops = BoundaryStops(run, lease, switch_read_at=switch_read_at)

    def run_set(self, **columns: Any) -> None:
        """Set run columns — only while this delivery holds the run, when it is a delivery."""
        if self.lease is not None:
            self.lease.hold(**columns)
        else:
            ProcessRun.objects.filter(pk=self.run.pk).update(**columns)

    def runtime(self) -> ModuleRuntime:
        if self._runtime is None:
            self._runtime = ModuleRuntime(
                process_id=self.run.process_id,
                version=self.run.module_version,
                user_id=self.invoker.pk,
                fingerprint=self.run.access_fingerprint,
            )
            # A ctx.query reads what the steps before it wrote: the ride group first.
            self._runtime.before_read = self.rides_flush
        return self._runtime

    def rides_flush(self) -> None:
        """Write the steps waiting in the ride group (``engine.grouping``), if any."""
        if self.rides is not None:
            self.rides.flush()

    def _last_flush(self, plan: list[PlannedStep]) -> None:
        """A chain's walk is done: when its group holds just its last step, that step's statement
        ends the run too (``run_end_riding``) — one commit for both. Not with more steps (a cancel
        read by the statement writes only the first of them, and the run must not end committed)
        nor for a plan whose task or event wait ``run_end`` would close."""
        rides, lease = self.rides, self.lease
        if rides is None or lease is None or len(rides) != 1:
            return
        if plan_waits(plan):
            return
        changes = run_end_riding(self.run, lease, RunState.COMMITTED)
        rides.flush(**changes)  # nothing written, and not ended, if it raises
        run_end_rode(self.run, lease, changes)
        self._ended_riding = True

    def close(self) -> None:
        if self._runtime is not None:
            self._runtime.close()

    def version_for_next_slice(self) -> None:
        """A migration about to open a slice takes the version deployed now (``module_served``:
        within its ~30 s pick-up). A slice already open — a re-delivery — finishes on its own."""
        if self.definition.get("eachRow") is None:
            return
        if self.run.slice_log.filter(is_open=True).exists():
            return
        served = module_served(self.run.process_id)
        if served is None or served.version == self.run.module_version:
            return
        definition = module_version(self.run.process_id, served.version).definition
        if definition.get("eachRow") is None:
            return  # no longer a migration: its slices cannot carry on as one; the run keeps its own
        self.run_set(module_version=served.version)
        self.run.module_version, self.definition = served.version, definition

    def execute(self) -> None:
        if self.run.rollback_requested:
            rollback_continue(self.run, self.actor, lease=self.lease)
            return
        self.version_for_next_slice()
        try:
            plan = plan_build(
                self.definition,
                self.run.input,
                for_each_cap=setting_get(SettingKey.PROCESSES_FOR_EACH_MAX_ITEMS),
            )
        except (ForEachCapExceeded, InputInvalid) as exc:
            run_end(self.run, RunState.FAILED, lease=self.lease, reason=str(exc))
            return
        self.ceilings = ceilings_for(len(plan))
        if self.definition.get("eachRow") is not None:
            MigrationSlice(self, plan).perform()
            return
        self.walk(plan)

    def stop_check(self) -> Stop | None:
        """At a step boundary: a cancel, an off switch or a per-run ceiling stops the run here
        (``engine.stops``: no statement per step)."""
        return self.stops.check(self.ceilings)

    def worked_ms(self) -> int:
        """The run's working time, this delivery's so far included."""
        return self.stops.worked_ms()

    def walk(self, plan: list[PlannedStep]) -> None:
        """A chain: the plan once, stopping at any step boundary."""
        if self.run.slices != 1:
            if self.lease is not None:  # written with the delivery's first write of the run row
                self.lease.carry(slices=1)
            else:
                self.run_set(slices=1)
            self.run.slices = 1
        recorded = self.recorded(row_key="", visit=1)
        # Every delivery starts at a step boundary: a run resumed past a ceiling stops here.
        stop = self.stop_check()
        if stop is not None:
            unreached = sum(1 for planned in plan if planned.step_id not in recorded)
            run_end(
                self.run, stop.state, lease=self.lease, reason=stop.reason, outstanding=unreached
            )
            return
        walk = self.walk_steps(
            plan, recorded, row_key="", visit=1, row=None, stop_between_steps=True
        )
        if not self._ended_riding:
            self.walk_end(walk, plan)

    def recorded(self, *, row_key: str, visit: int) -> dict[str, ProcessRunStep]:
        if ledger_seen_empty(self.run):  # the claim saw no ledger row: none to read
            return {}
        rows = self.run.ledger.filter(row_key=row_key, visit=visit, superseded=0).exclude(
            skip_reason=SkipReason.NOT_REACHED
        )
        return {row.step_id: row for row in rows}

    def ctx(self, planned: PlannedStep, steps: dict[str, dict], row: dict | None) -> dict:
        """The ``ctx`` the step's functions are called with."""
        return {
            "input": self.run.input,
            "runId": str(self.run.run_id),
            "steps": steps,
            "item": planned.item,
            "index": planned.index,
            "row": row,
        }

    def walk_steps(
        self,
        plan: list[PlannedStep],
        recorded: dict[str, ProcessRunStep],
        *,
        row_key: str,
        visit: int,
        row: dict | None,
        stop_between_steps: bool,
    ) -> Walk:
        """Perform the plan's unrecorded steps for one pass (a chain, or one row of a migration),
        its ride group written before it returns. A cancel read by the group's statement stops a
        chain at the first step it did not write; a key found taken there walks the pass again
        from the ledger (that step then runs in a transaction, answered with the key's record)."""
        if self.rides is not None:
            self.rides.cut = stop_between_steps  # a migration's row finishes whole
        while True:
            try:
                walk = self._pass(plan, recorded, Place(row_key, visit, row, stop_between_steps))
                if walk.status == WalkStatus.DONE and stop_between_steps:
                    self._last_flush(plan)
                self.rides_flush()
                return walk
            except RidesUndone as undone:
                if undone.cancelled:
                    position = next(n for n, p in enumerate(plan) if p.step_id == undone.step_id)
                    return Walk(WalkStatus.STOP, position, plan[position], stop=CANCELLED)
                recorded = self.recorded(row_key=row_key, visit=visit)

    def _pass(
        self, plan: list[PlannedStep], recorded: dict[str, ProcessRunStep], place: Place
    ) -> Walk:
        row_key, visit, row = place.row_key, place.visit, place.row
        steps: dict[str, dict] = {}
        sent = Sent()
        for position, planned in enumerate(plan):
            ledger_row = recorded.get(planned.step_id)
            fresh = ledger_row is None  # written by this delivery: its verdict is not in yet
            if ledger_row is None:
                if place.stop_between_steps and position:
                    if self.hand_back_at is not None and time.monotonic() >= self.hand_back_at:
                        return Walk(WalkStatus.HAND_BACK, position, planned)
                    stop = self.stop_check()
                    if stop is not None:
                        return Walk(WalkStatus.STOP, position, planned, stop=stop)
                ctx = self.ctx(planned, steps, row)
                key = step_key(self.run, planned, row, row_key)
                # The step's writes name it on the write trail and on any delete held for approval.
                actor = replace(self.actor, process_step=planned.step_id)
                scope = StepScope(
                    run=self.run,
                    actor=actor,
                    idempotency_key=key,
                    row_key=row_key,
                    slice_number=visit,
                    visit=visit,
                    lease=self.lease,
                    started_at=timezone.now(),
                    ahead=self.look.ahead(plan, position, steps, row, sent, row_key),
                    rides=self.rides,
                    pg_row_id=sent.chosen.get(position),
                )
                result = step_execute(scope, planned, ctx, self.runtime())
                waiting = _STEP_WAITS.get(result.status)
                if waiting is not None:
                    return Walk(waiting, position, planned, result=result)
                ledger_row = result.ledger_row
            # A verdict can land only once the step's write has committed, with its park (or
            # before the walk's end parks it, which looks again): only a row recorded earlier
            # may hold one, decided some way the verdict's fold does not cover.
            if (
                ledger_row.awaiting_verdict
                and (fresh or verdict_take(ledger_row).status == VerdictWait.PENDING)
                and not is_planning()  # a plan goes on: the minted id is a placeholder
            ):
                return Walk(WalkStatus.WAIT_SOURCE, position, planned, row=ledger_row)
            if ledger_row.disposition == Disposition.FAILED and not (
                planned.kind in (StepKind.DELETE, StepKind.TASK)
                and planned.definition.get("onRefused") == OnRefused.CONTINUE
            ):
                return Walk(WalkStatus.FAILED, position, planned, row=ledger_row)
            steps[planned.step_id] = planned_outcome(
                step_outcome(ledger_row),
                step_id=planned.step_id,
                record_type=ledger_row.record_type,
            )
        return Walk(WalkStatus.DONE, len(plan))
