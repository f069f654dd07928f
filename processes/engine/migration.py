"""One slice of an ``eachRow`` migration.

The slice reads ``eachRow.outstanding(input)`` once, as the invoker, and keeps the rows it may
take (up to the slice's row budget) so a crash re-delivery works through the same rows and resumes
after every step the slice recorded. Before each row — never mid-row — it checks its own budget
(rows, wall clock) and the run's stops (cancel, switches, ceilings). Each row is a new visit: create
steps are keyed by process + row key + step, so a row offered again writes nothing and hands on the
first record; update and declined steps run again. Nothing one row's calls leave behind is seen by
the next: every sandbox call starts in a fresh scope (``extensions/js/runtime.js``). A slice with
rows left queues the next slice as a separate job on the async lane, until nothing is outstanding
or the slice cap.

A migration whose steps are creates and updates by ``pgRowId`` (no ``when``, no ``awaitSource``) —
the seed's usual create-then-stamp shape — works in batches of ``PROCESS_SLICE_BATCH_ROWS`` rows:
each step's functions for the batch's rows in one exchange with the sandbox (each call still in a
fresh scope, with the ``ctx.steps`` the row will have: a create's record id is chosen before its
write), then one transaction holding every row's writes, trail rows and ledger rows
(``records.batch_writes``) — the batch commits whole or not at all. Checks and ``before_save``
hooks still run per write, before anything is written; a row the batch cannot take (a function of
it declines or fails, a check or hook refuses it, its key was used) ends the batch and runs alone,
as every row did before, so it is refused, failed or handed on exactly as then (its functions are
called again). The stops and the slice budget are checked before each batch: a cancel lands within
one batch.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction
from django.utils import timezone

from guardrails.settings import setting_get
from kernel.bulk import rows_insert
from kernel.ids import uuid_or_none
from processes.codes import ProcessCode
from processes.engine.ending import run_end, run_redeliver, run_wait
from processes.engine.ledger import ledger_skip_rest, sequence_next, write_outcome
from processes.engine.plan import PlannedStep
from processes.engine.query import query_run
from processes.engine.runtime import StepCodeFailed
from processes.engine.statuses import StepKind, WalkStatus
from processes.models import (
    Disposition,
    PendingReason,
    ProcessRunSlice,
    ProcessRunStep,
    RunState,
    SkipReason,
)
from records.batch_writes import BatchWrite, CreateItem, UpdateItem, rows_write
from records.boundary import WriteResult
from records.models import Record

if TYPE_CHECKING:
    from processes.engine.runner import ChainRunner


class MigrationSlice:
    def __init__(self, runner: ChainRunner, plan: list[PlannedStep]) -> None:
        self.runner, self.run, self.plan = runner, runner.run, plan
        self.key = runner.definition["eachRow"]["key"]

    # -- opening the slice -------------------------------------------------------------------

    def _open(self) -> ProcessRunSlice | None:
        current = self.run.slice_log.order_by("-number").first()
        if current is not None and current.is_open:
            return current  # a re-delivery of the slice in hand
        number = (current.number if current else 0) + 1
        cap = self.runner.ceilings.slice_cap
        if number > cap:
            run_end(
                self.run,
                RunState.COMMITTED,
                lease=self.runner.lease,
                outstanding=self.run.outstanding,
                reason=(
                    f"stopped at the slice cap processes.slice_cap ({cap}) with work outstanding; invoke the "
                    "process again to carry on"
                ),
            )
            return None
        try:
            query = self.runner.runtime().call(("eachRow", "outstanding"), None, self.run.input)
            if not isinstance(query, str):
                raise StepCodeFailed(
                    ProcessCode.OUTSTANDING_INVALID,
                    "eachRow.outstanding must return a PostgREST query string",
                )
            rows = query_run(
                user_id=self.runner.invoker.pk,
                fingerprint=self.run.access_fingerprint,
                path_and_query=query,
            )
        except StepCodeFailed as exc:
            run_end(
                self.run,
                RunState.FAILED,
                lease=self.runner.lease,
                reason=f"eachRow.outstanding failed: {exc.code}: {exc.message}",
            )
            return None
        except Exception as exc:  # the read's own refusal, named
            code = getattr(exc, "code", type(exc).__name__)
            run_end(
                self.run,
                RunState.FAILED,
                lease=self.runner.lease,
                reason=f"the outstanding read failed: {code}: {getattr(exc, 'message', exc)}",
            )
            return None
        unique: dict[str, dict] = {}
        for row in rows:
            value = row.get(self.key)
            if value in (None, ""):
                run_end(
                    self.run,
                    RunState.FAILED,
                    lease=self.runner.lease,
                    reason=(
                        f"a row of the outstanding read has no {self.key!r} (eachRow.key): select it in the query"
                    ),
                )
                return None
            unique.setdefault(str(value), row)  # a row listed twice in one slice is visited once
        taken = list(unique.values())[: self.runner.ceilings.slice_max_rows]
        with transaction.atomic():
            opened = ProcessRunSlice.objects.create(
                run=self.run,
                number=number,
                rows=taken,
                total_read=len(unique),
                module_version=self.run.module_version,
            )
            self.runner.run_set(slices=number, outstanding=len(unique))
        self.run.slices, self.run.outstanding = number, len(unique)
        return opened

    # -- working through it ------------------------------------------------------------------

    def perform(self) -> None:
        current = self._open()
        if current is None:
            return
        started = time.monotonic()
        finished = 0
        # What earlier deliveries of this slice recorded, read once (not a read per row).
        done = self._recorded(current)
        batch_rows = setting_get("PROCESS_SLICE_BATCH_ROWS") if self._batchable() else 1
        alone = False  # the row after a batch that stopped short runs alone
        size = 1  # a slice's first batch is one row; each next one doubles, within the budget
        rows, position = current.rows, 0
        while position < len(rows):
            row = rows[position]
            row_key = str(row[self.key])
            recorded = done.get(row_key, {})
            if len(recorded) == len(self.plan) and not any(
                r.awaiting_verdict for r in recorded.values()
            ):
                finished += 1  # done before a crash: not a new visit
                position += 1
                continue
            if not recorded:
                remaining = current.total_read - finished
                elapsed_ms = (time.monotonic() - started) * 1000
                # The budget is checked before a row (or batch), and only once the slice has
                # finished one: a budget smaller than one row still moves the migration a row per slice.
                over_budget = (
                    position >= self.runner.ceilings.slice_max_rows
                    or elapsed_ms >= self.runner.ceilings.slice_max_ms
                )
                if finished and over_budget:
                    break
                stop = self.runner.stop_check()
                if stop is not None:
                    self._close(current)
                    run_end(
                        self.run,
                        stop.state,
                        lease=self.runner.lease,
                        reason=stop.reason,
                        outstanding=remaining,
                    )
                    return
                if batch_rows > 1 and not alone:
                    wanted = min(size, batch_rows, self._rows_fitting(elapsed_ms, finished))
                    taken = self._batch(current, rows, position, done, wanted)
                    finished += taken
                    position += taken
                    size *= 2
                    alone = position < len(rows) and taken < wanted
                    if taken:
                        continue
                alone = False
            walk = self.runner.walk_steps(
                self.plan,
                recorded,
                row_key=row_key,
                visit=current.number,
                row=row,
                stop_between_steps=False,
            )
            if walk.status == WalkStatus.DONE:
                finished += 1
                position += 1
                continue
            left = current.total_read - finished - 1
            if walk.status == WalkStatus.WAIT_SOURCE:
                self.runner.wait_source(walk.at, walk.ledger_row, outstanding=left + 1)
            elif walk.status == WalkStatus.WAIT_WINDOW:
                self.runner.wait_window(
                    walk.at,
                    walk.result,
                    self.plan[walk.position :],
                    row_key=row_key,
                    visit=current.number,
                    outstanding=left + 1,
                )
            elif walk.status == WalkStatus.WAIT_RETRY:
                self.runner.wait_retry(walk.at, walk.result.retry_at, walk.result.attempts)
            elif walk.status == WalkStatus.FAILED:
                ledger_skip_rest(
                    self.run,
                    self.plan[walk.position + 1 :],
                    row_key=row_key,
                    slice_number=current.number,
                    visit=current.number,
                    lease=self.runner.lease,
                )
                self._close(current)
                self.runner.fail(walk.at, walk.ledger_row, outstanding=left)
            return
        self._finish(current, finished)

    def _recorded(self, current: ProcessRunSlice) -> dict[str, dict[str, ProcessRunStep]]:
        """The slice's ledger so far, by row key and step (a re-delivery resumes after it)."""
        found: dict[str, dict[str, ProcessRunStep]] = {}
        rows = self.run.ledger.filter(visit=current.number).exclude(
            skip_reason=SkipReason.NOT_REACHED
        )
        for step in rows.exclude(row_key=""):
            found.setdefault(step.row_key, {})[step.step_id] = step
        return found

    # -- batches -----------------------------------------------------------------------------

    def _batchable(self) -> bool:
        """Every step a create or an update (by ``pgRowId``) that neither asks ``when`` nor waits
        for the source: rows batch (``records.batch_writes``)."""
        return all(_batches(planned) for planned in self.plan)

    def _rows_fitting(self, elapsed_ms: float, finished: int) -> int:
        """How many more rows the slice's wall clock leaves room for at the rate it has gone so
        far (the budget is checked before a batch, as before a row: a batch must not overrun it
        by much more than a row does)."""
        if not finished:
            return 1
        left_ms = self.runner.ceilings.slice_max_ms - elapsed_ms
        return max(1, int(left_ms * finished / max(elapsed_ms, 0.001)))

    def _batch(
        self,
        current: ProcessRunSlice,
        rows: list[dict],
        position: int,
        done: dict[str, dict[str, ProcessRunStep]],
        batch_rows: int,
    ) -> int:
        """Write up to ``batch_rows`` unvisited rows from ``position`` — every step of each — in
        one transaction with their ledger rows; answers how many rows it finished (from the first)."""
        per_row = len(self.plan)
        room = (self.runner.ceilings.max_writes - self.run.writes) // per_row  # the write ceiling
        batch: list[dict] = []
        for row in rows[position : position + min(batch_rows, room)]:
            if str(row[self.key]) in done:
                break
            batch.append(row)
        writes = self._built(batch)
        if not writes:
            return 0
        try:
            with transaction.atomic():
                written = rows_write(rows=writes)
                if not written:
                    return 0
                self._ledger_insert(current, batch, written)
                count = sum(len(results) for results in written)
                if self.runner.lease is not None:  # proves the lease in this transaction
                    self.runner.lease.hold(writes=self.run.writes + count)
        except IntegrityError:  # a concurrent writer took a key: these rows go one at a time
            return 0
        self.run.writes += count
        return len(written)

    def _built(self, batch: list[dict]) -> list[list[BatchWrite]]:
        """Each row's writes, step by step: every step's functions called for the batch's rows in
        one exchange with the sandbox, with the ``ctx.steps`` the row will have (a create's record
        id chosen now). The list ends before the first row a function of which did not answer a
        write (it declined, failed or is malformed: the row alone records which)."""
        runtime = self.runner.runtime()
        steps: list[dict[str, dict]] = [{} for _ in batch]
        writes: list[list[BatchWrite]] = [[] for _ in batch]
        usable = len(batch)
        for position, planned in enumerate(self.plan):
            ctxs = [self.runner.ctx(planned, dict(steps[n]), batch[n]) for n in range(usable)]
            built = runtime.call_each(planned.path + ("build",), ctxs)[:usable]
            payloads = []
            for value in built:
                if not isinstance(value, dict) or not isinstance(value.get("parent"), dict):
                    break
                payloads.append(value)
            actor = replace(self.runner.actor, process_step=planned.step_id)
            record_type = planned.definition["recordType"]
            if planned.kind == StepKind.CREATE:
                for n, value in enumerate(payloads):
                    key = f"row:{self.run.process_id}:{batch[n][self.key]}:{planned.step_id}"
                    item = CreateItem(value["parent"], value.get("lines"), key)
                    chosen = uuid.uuid4()
                    writes[n].append(BatchWrite(actor, record_type, item, chosen))
                    steps[n][planned.step_id] = write_outcome(chosen, None, Disposition.CONFIRMED)
                usable = len(payloads)
            else:
                addresses = runtime.call_each(planned.path + ("update", "pgRowId"), ctxs)
                targets = [uuid_or_none(str(a)) for a in addresses[: len(payloads)]]
                usable = next((n for n, t in enumerate(targets) if t is None), len(targets))
                # Later steps see the record's external id: read now, checked once it is locked.
                seen = _external_ids(targets[:usable]) if position + 1 < len(self.plan) else None
                for n in range(usable):
                    target = targets[n]
                    if seen is not None and target not in seen:
                        usable = n
                        break
                    external = seen[target] if seen is not None else None
                    update = UpdateItem(payloads[n]["parent"], target)
                    if seen is not None:
                        update = UpdateItem(payloads[n]["parent"], target, external)
                    writes[n].append(BatchWrite(actor, record_type, update))
                    steps[n][planned.step_id] = write_outcome(
                        target, external, Disposition.CONFIRMED
                    )
            if not usable:
                return []
        return writes[:usable]

    def _ledger_insert(
        self, current: ProcessRunSlice, batch: list[dict], written: list[list[WriteResult]]
    ) -> None:
        """The ledger row of every write, in row order (each row's steps in step order)."""
        placed = [
            (str(batch[n][self.key]), planned, result)
            for n, results in enumerate(written)
            for planned, result in zip(self.plan, results, strict=True)
        ]
        template = ProcessRunStep(
            run=self.run,
            step_id=self.plan[0].step_id,
            disposition=Disposition.CONFIRMED,
            slice=current.number,
            visit=current.number,
            skip_reason=SkipReason.NONE,
            counts_write=True,
        )
        rows_insert(
            ProcessRunStep,
            template,
            {
                "sequence": [sequence_next(self.run) for _ in placed],
                "step_id": [planned.step_id for _, planned, _ in placed],
                "record_type": [result.record.record_type for _, _, result in placed],
                "action": [str(planned.kind) for _, planned, _ in placed],
                "row_key": [key for key, _, _ in placed],
                "pg_row_id": [result.record.pk for _, _, result in placed],
                "external_id": [result.record.external_id for _, _, result in placed],
                "created_record": [result.is_new for _, _, result in placed],
                "rollback_keep": [planned.is_keep for _, planned, _ in placed],
            },
        )

    def _close(self, current: ProcessRunSlice) -> None:
        ProcessRunSlice.objects.filter(pk=current.pk).update(
            is_open=False, finished_at=timezone.now()
        )

    def _finish(self, current: ProcessRunSlice, finished: int) -> None:
        remainder = current.total_read - finished
        self._close(current)
        if remainder == 0:
            run_end(self.run, RunState.COMMITTED, lease=self.runner.lease)
            return
        if current.number >= self.runner.ceilings.slice_cap:
            run_end(
                self.run,
                RunState.COMMITTED,
                lease=self.runner.lease,
                outstanding=remainder,
                reason=(
                    f"stopped at the slice cap processes.slice_cap ({current.number}) with {remainder} rows "
                    "outstanding; invoke the process again to carry on"
                ),
            )
            return
        # The next slice is a separate job on the async lane, under the same run id.
        with transaction.atomic():
            self.runner.run_set(outstanding=remainder)
            self.run.outstanding = remainder
            run_wait(self.run, lease=self.runner.lease, pending_reason=PendingReason.QUEUED)
            run_redeliver(self.run.pk, mode="async")


def _batches(planned: PlannedStep) -> bool:
    """Whether rows batch through ``planned``: a create, or an update by ``pgRowId`` without
    ``expectedSyncVersion``, that neither asks ``when`` nor waits for the source."""
    definition = planned.definition
    if (
        definition.get("when") is not None
        or definition.get("awaitSource") is True
        or definition.get("build") is None
    ):
        return False
    if planned.kind == StepKind.CREATE:
        return True
    update = definition.get("update") or {}
    return (
        planned.kind == StepKind.UPDATE
        and update.get("pgRowId") is not None
        and update.get("step") is None
        and update.get("expectedSyncVersion") is None
    )


def _external_ids(targets: list) -> dict:
    """The external id of each record named (those that exist), by id."""
    return dict(Record.reads.filter(pg_row_id__in=targets).values_list("pg_row_id", "external_id"))
