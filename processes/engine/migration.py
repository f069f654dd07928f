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
the seed's usual create-then-stamp shape — works in batches of ``processes.slice_batch_rows`` rows:
each step's functions for the batch's rows in one exchange with the sandbox (each call still in a
fresh scope, with the ``ctx.steps`` the row will have: a create's record id is chosen before its
write), then one transaction holding every row's writes, trail rows and ledger rows
(``records.batch_writes``) — the batch commits whole or not at all. Checks and ``before_save``
hooks still run per write, before anything is written; a row the batch cannot take (a function of
it declines or fails, a check or hook refuses it, its key was used) ends the batch and runs alone,
as every row did before, so it is refused, failed or handed on exactly as then (its functions are
called again). The stops and the slice budget are checked before each batch: a cancel lands within
one batch. While a batch writes, the sandbox child computes the next batch's functions (sent
ahead, ``SliceBatches.batch``'s ``next_rows``): a later slice's first batch is a third of its rows
(``FIRST_BATCH_SHARE``) and the second the rest, built beside the first's writes.
"""

from __future__ import annotations

import time

from django.db import transaction
from django.utils import timezone

from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from processes.codes import ProcessCode
from processes.engine.ending import run_end, run_redeliver, run_wait
from processes.engine.ledger import ledger_skip_rest
from processes.engine.migration_batch import SliceBatches
from processes.engine.plan import PlannedStep
from processes.engine.query import query_bounded
from processes.engine.runtime import StepCodeFailed
from processes.engine.slice_host import SliceHost
from processes.engine.statuses import WalkStatus
from processes.engine.walks import Walk
from processes.models import (
    PendingReason,
    ProcessRunSlice,
    ProcessRunStep,
    RunState,
    SkipReason,
)
from records.rest.leading import Leading, rest_read_leading

# A later slice's first batch is this share of its rows and the next doubles it (a third, then
# the two thirds left): the second batch's functions are computed by the sandbox child while the
# first writes (``SliceBatches.batch``'s ``next_rows``), at the cost of one more transaction.
FIRST_BATCH_SHARE = 3


class MigrationSlice:
    def __init__(self, runner: SliceHost, plan: list[PlannedStep]) -> None:
        self.runner, self.run, self.plan = runner, runner.run, plan
        self.key = runner.definition["eachRow"]["key"]
        self.pace_ms: float | None = None  # a row's time in the previous slice (``_pace``)

    # -- opening the slice -------------------------------------------------------------------

    def _open(self) -> ProcessRunSlice | None:
        current = self.run.slice_log.order_by("-number").first()
        if current is not None and current.is_open:
            return current  # a re-delivery of the slice in hand
        self.pace_ms = self._pace(current)
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
        read = self._outstanding()
        if read is None:
            return None
        if read.keyless:
            run_end(
                self.run,
                RunState.FAILED,
                lease=self.runner.lease,
                reason=(
                    f"a row of the outstanding read has no {self.key!r} (eachRow.key): select it in the query"
                ),
            )
            return None
        taken = read.rows
        with transaction.atomic():
            opened = ProcessRunSlice.objects.create(
                run=self.run,
                number=number,
                rows=taken,
                total_read=read.keys,
                module_version=self.run.module_version,
            )
            self.runner.run_set(slices=number, outstanding=read.keys)
        self.run.slices, self.run.outstanding = number, read.keys
        return opened

    def _pace(self, previous: ProcessRunSlice | None) -> float | None:
        """The milliseconds a row took in the run's previous slice (its rows visited over its
        wall clock), or None (the first slice, or one with nothing visited): the slice's first
        batch is sized by it instead of starting at one row."""
        if previous is None or previous.finished_at is None:
            return None
        visited = (
            self.run.ledger.filter(visit=previous.number)
            .exclude(row_key="")
            .values("row_key")
            .distinct()
            .count()
        )
        elapsed_ms = (previous.finished_at - previous.started_at).total_seconds() * 1000
        return elapsed_ms / visited if visited else None

    def _outstanding(self) -> Leading | None:
        """What ``eachRow.outstanding`` reads now, as the invoker: the rows the slice may take
        (its first ``processes.slice_max_rows`` of distinct key) and the whole answer's distinct
        keys, counted in SQL; None when it failed (the run ended failed, naming why)."""
        try:
            query = self.runner.runtime().call(("eachRow", "outstanding"), None, self.run.input)
            if not isinstance(query, str):
                raise StepCodeFailed(
                    ProcessCode.OUTSTANDING_INVALID,
                    "eachRow.outstanding must return a PostgREST query string",
                )
            take = self.runner.ceilings.slice_max_rows
            read = query_bounded(
                lambda user, max_bytes: rest_read_leading(
                    user=user,
                    path_and_query=query.lstrip("/"),
                    key=self.key,
                    take=take,
                    max_bytes=max_bytes,
                ),
                user_id=self.runner.invoker.pk,
                fingerprint=self.run.access_fingerprint,
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
        return read

    # -- working through it ------------------------------------------------------------------

    def perform(self) -> None:
        current = self._open()
        if current is None:
            return
        started, finished = time.monotonic(), 0
        # What earlier deliveries of this slice recorded, read once (not a read per row).
        done = self._recorded(current)
        batches = SliceBatches(self.runner, self.plan, self.key)
        batch_rows = (
            setting_get(SettingKey.PROCESSES_SLICE_BATCH_ROWS) if batches.batchable() else 1
        )
        alone = False  # the row after a batch that stopped short runs alone
        # A run's first slice starts with one row and doubles each batch, within the budget; a
        # later slice knows the pace of the one before: a third of its rows, then the rest (a
        # batch's fixed cost paid twice a slice, not ~9 times; the second built ahead).
        share = -(-len(current.rows) // FIRST_BATCH_SHARE)
        size = min(batch_rows, share) if self.pace_ms is not None else 1
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
                elapsed_ms = (time.monotonic() - started) * 1000
                # The budget is checked before a row (or batch), and only once the slice has
                # finished one: a budget smaller than one row still moves the migration a row per slice.
                if finished and self._over_budget(position, elapsed_ms):
                    break
                if self._stopped(current, current.total_read - finished):
                    return
                if batch_rows > 1 and not alone:
                    fitting = batches.rows_fitting(elapsed_ms, finished, self.pace_ms)
                    wanted = min(size, batch_rows, fitting)
                    ahead = max(0, min(size * 2, batch_rows, fitting - wanted))
                    taken = batches.batch(current, rows, position, done, wanted, ahead)
                    finished, position, size = finished + taken, position + taken, size * 2
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
            if walk.status != WalkStatus.DONE:
                self._halted(current, walk, row_key, left=current.total_read - finished - 1)
                return
            finished, position = finished + 1, position + 1
        self._finish(current, finished)

    def _over_budget(self, position: int, elapsed_ms: float) -> bool:
        """The slice's row or wall-clock budget is spent."""
        ceilings = self.runner.ceilings
        return position >= ceilings.slice_max_rows or elapsed_ms >= ceilings.slice_max_ms

    def _stopped(self, current: ProcessRunSlice, remaining: int) -> bool:
        """A cancel, a switch or a ceiling stops the run before this row: ended here."""
        stop = self.runner.stop_check()
        if stop is None:
            return False
        self._close(current)
        run_end(
            self.run, stop.state, lease=self.runner.lease, reason=stop.reason, outstanding=remaining
        )
        return True

    def _halted(self, current: ProcessRunSlice, walk: Walk, row_key: str, *, left: int) -> None:
        """A row's walk did not reach its end: park the run on its wait, or fail it."""
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

    def _recorded(self, current: ProcessRunSlice) -> dict[str, dict[str, ProcessRunStep]]:
        """The slice's ledger so far, by row key and step (a re-delivery resumes after it)."""
        found: dict[str, dict[str, ProcessRunStep]] = {}
        rows = self.run.ledger.filter(visit=current.number, superseded=0).exclude(
            skip_reason=SkipReason.NOT_REACHED
        )
        for step in rows.exclude(row_key=""):
            found.setdefault(step.row_key, {})[step.step_id] = step
        return found

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
