"""A migration slice's batches: many rows' writes — every step of each — in one transaction with
their ledger rows (``records.batch_writes``), each step's functions for the batch's rows called in
one exchange with the sandbox. See ``processes.engine.migration`` for when a slice batches."""

from __future__ import annotations

import uuid
from dataclasses import replace

from django.db import IntegrityError, transaction

from kernel.bulk import rows_insert
from kernel.ids import uuid_or_none
from processes.engine.ledger import sequence_next, write_outcome
from processes.engine.plan import PlannedStep
from processes.engine.slice_host import SliceHost
from processes.engine.statuses import StepKind
from processes.models import (
    Disposition,
    ProcessRunSlice,
    ProcessRunStep,
    SkipReason,
)
from records.batch_writes import BatchWrite, CreateItem, UpdateItem, Written, rows_write
from records.models import Record


class SliceBatches:
    """The batches of one slice of ``runner``'s run over ``plan``, rows keyed by ``key``."""

    def __init__(self, runner: SliceHost, plan: list[PlannedStep], key: str) -> None:
        self.runner, self.run, self.plan, self.key = runner, runner.run, plan, key
        # The next batch's row keys and create ids, as its functions were started (``_ahead``).
        self._chosen: tuple[list[str], list[dict[str, uuid.UUID]]] | None = None

    def batchable(self) -> bool:
        """Every step a create or an update (by ``pgRowId``) that neither asks ``when`` nor waits
        for the source: rows batch (``records.batch_writes``)."""
        return all(_batches(planned) for planned in self.plan)

    def rows_fitting(self, elapsed_ms: float, finished: int, pace_ms: float | None = None) -> int:
        """How many more rows the slice's wall clock leaves room for at the rate it has gone so
        far — before its first row, at ``pace_ms`` a row (the previous slice's), else one row
        (the budget is checked before a batch, as before a row: a batch must not overrun it by
        much more than a row does)."""
        if finished:
            pace_ms = max(elapsed_ms, 0.001) / finished
        elif pace_ms is None:
            return 1
        left_ms = self.runner.ceilings.slice_max_ms - elapsed_ms
        return max(1, int(left_ms / max(pace_ms, 0.001)))

    def batch(
        self,
        current: ProcessRunSlice,
        rows: list[dict],
        position: int,
        done: dict[str, dict[str, ProcessRunStep]],
        batch_rows: int,
        next_rows: int = 0,
    ) -> int:
        """Write up to ``batch_rows`` unvisited rows from ``position`` — every step of each — in
        one transaction with their ledger rows; answers how many rows it finished (from the first).
        With ``next_rows``, the functions of the next batch's rows are started in the sandbox
        before this batch writes (``_ahead``)."""
        per_row = len(self.plan)
        room = (self.runner.ceilings.max_writes - self.run.writes) // per_row  # the write ceiling
        batch = _leading(rows, position, min(batch_rows, room), done, self.key)
        writes = self._built(batch)
        if not writes:
            return 0
        if next_rows and len(writes) == len(batch):
            after = min(next_rows, room - len(batch))
            self._ahead(_leading(rows, position + len(batch), after, done, self.key))
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

    def _ids(self, batch: list[dict]) -> list[dict[str, uuid.UUID]]:
        """The record id each create step of each row takes: those the batch's functions were
        started with ahead (``_ahead``) when it is that batch, else new ones."""
        keys = [str(row[self.key]) for row in batch]
        chosen, self._chosen = self._chosen, None
        if chosen is not None and chosen[0] == keys:
            return chosen[1]
        creates = [p.step_id for p in self.plan if p.kind == StepKind.CREATE]
        return [{step_id: uuid.uuid4() for step_id in creates} for _ in batch]

    def _ahead(self, batch: list[dict]) -> None:
        """Start the functions of ``batch`` (the next batch's rows) in the sandbox, in the order
        ``_built`` will call them, with the ``ctx`` each will have if every row before it builds
        a write: the child computes them while this batch writes (``Sandbox.call_each_ahead``).
        Up to the first update: a later step sees the record it read. A batch that turns out
        otherwise makes other calls, and what was started is dropped."""
        if not batch:
            return
        ids = self._ids(batch)
        self._chosen = ([str(row[self.key]) for row in batch], ids)
        steps: list[dict[str, dict]] = [{} for _ in batch]
        parts: list[tuple[tuple, list[dict]]] = []
        for planned in self.plan:
            ctxs = [self.runner.ctx(planned, dict(steps[n]), row) for n, row in enumerate(batch)]
            parts.append((planned.path + ("build",), ctxs))
            if planned.kind != StepKind.CREATE:
                parts.append((planned.path + ("update", "pgRowId"), ctxs))
                break
            for n in range(len(batch)):
                chosen = ids[n][planned.step_id]
                steps[n][planned.step_id] = write_outcome(chosen, None, Disposition.CONFIRMED)
        self.runner.runtime().call_each_ahead(parts)

    def _built(self, batch: list[dict]) -> list[list[BatchWrite]]:
        """Each row's writes, step by step: every step's functions called for the batch's rows in
        one exchange with the sandbox, with the ``ctx.steps`` the row will have (a create's record
        id chosen now). The list ends before the first row a function of which did not answer a
        write (it declined, failed or is malformed: the row alone records which)."""
        runtime = self.runner.runtime()
        ids = self._ids(batch)
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
                    chosen = ids[n][planned.step_id]
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
        self, current: ProcessRunSlice, batch: list[dict], written: list[list[Written]]
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
                "record_type": [result.record_type for _, _, result in placed],
                "action": [str(planned.kind) for _, planned, _ in placed],
                "row_key": [key for key, _, _ in placed],
                "pg_row_id": [result.pg_row_id for _, _, result in placed],
                "external_id": [result.external_id for _, _, result in placed],
                "created_record": [result.is_new for _, _, result in placed],
                "rollback_keep": [planned.is_keep for _, planned, _ in placed],
            },
        )


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


def _leading(
    rows: list[dict], position: int, count: int, done: dict[str, dict], key: str
) -> list[dict]:
    """Up to ``count`` rows from ``position``, ending before the first a delivery visited."""
    leading: list[dict] = []
    for row in rows[position : position + max(count, 0)]:
        if str(row[key]) in done:
            break
        leading.append(row)
    return leading


def _external_ids(targets: list) -> dict:
    """The external id of each record named (those that exist), by id."""
    return dict(Record.reads.filter(pg_row_id__in=targets).values_list("pg_row_id", "external_id"))
