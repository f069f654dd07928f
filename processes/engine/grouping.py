"""The engine's grouping: a delivery's consecutive steps written together, and the look-ahead that
lets the next step's function compute while this one is made. The one place the engine decides
what is written when; the runner's pass is a plain loop over steps that hands each step its
``StepScope`` (``steps.step_execute``).

**The group.** A chain's create — or update, or delete, by ``pgRowId`` —
that can be grouped (``records.step_writes.create_groupable``: PostgreSQL, outside a
transaction; a connected, hooked or watched type too) is checked and built at once
(``record_create_ready``, ``record_update_ready``, ``record_delete_ready``: the boundary's checks
and hooks, per record; the steps in ``engine.grouped_steps``) but not written: its rows join
the delivery's group, and the walk goes on with the outcome the step will have (a create's
record id is chosen before the write). The group is written — the lease proof and every row of every step in it — by one
autocommitted statement (``group_commit``): at the setting ``processes.step_group_max`` steps (1:
every step alone), once ``RIDE_GROUP_MS`` have passed since its first step, and always before
anything else touches the database for the run — a step that is not grouped, a refusal, a
``ctx.query`` read (it reads after the group is written: flush first), an update or delete of a
record the group changes, a delete of one it creates, the walk's end. An update of a record the
group creates joins it without a read (``records.step_folds``): the create's INSERT writes the
record as the update leaves it. An update or delete is written only where its record is
still at the version it was read at; if another writer moved it, the statement writes nothing and that
step is made again alone (locked), the steps before it written again without it. So nothing
outside the delivery can tell a grouped step from one committed alone, except that it lands with
its neighbours; a worker that dies loses only the group's uncommitted steps, which the next
delivery performs again (nothing was written).

A cancel is read back by the group's statement, as by any step's: with a cancel pending, the
statement writes the group's first step only — the step in flight from the outside's point of view —
and the run stops there, as it stops at the next step boundary when steps commit alone.

**The look-ahead** (``LookAhead``). Once a step's outcome is known (a grouped create's before its
write, a grouped update's or delete's once it is made ready — before its record is read, when
the group reads it, ``records.step_reads`` — another step's once its write is done), the next
step's functions are started in the sandbox with the ctx that step will have, in the order it
calls them (``step_functions``: its ``when`` alone, else its ``build`` and its address's
function); and while the step before is a create that would join the group, the functions of
the step after it too, with the outcome that create will have (its record id chosen now,
``Sent.chosen``) — up to ``AHEAD_STEPS`` steps ahead, all in one request (one wake-up of the
child), sent again once only the next step is ahead. A step takes a result only if its ctx is the
same (the sandbox compares); otherwise every result ahead is dropped.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from processes.engine.lease import Lease, LeaseLost
from processes.engine.ledger import sequence_release, write_outcome
from processes.engine.plan import PlannedStep
from processes.engine.statuses import StepKind
from processes.models import Disposition, ProcessRun
from records.models import Record
from records.step_writes import (
    CreateReady,
    GroupKeyTaken,
    GroupReady,
    GroupStale,
    UpdateReady,
    create_groupable,
    group_commit,
)

# A group is written once this long has passed since its first step — checked as a step joins
# it; and at ``processes.step_group_max`` steps (a group's rows are one INSERT per table).
RIDE_GROUP_MS = 50


class RidesUndone(Exception):
    """The group's steps from ``step_id`` on were not written: ``cancelled`` — the run was
    cancelled and stops at that step — or the step's idempotency key was taken (its record
    stands), and the walk performs it again from there, that step in a transaction."""

    def __init__(self, step_id: str, *, cancelled: bool) -> None:
        super().__init__(f"rides undone from step {step_id!r}")
        self.step_id = step_id
        self.cancelled = cancelled


class RideGroup:
    """The steps a delivery made ready and has not written yet (see the module docstring).
    ``cut``: a cancel read by the statement writes only the group's first step (a chain; a
    migration's row finishes whole)."""

    def __init__(self, run: ProcessRun, lease: Lease) -> None:
        self.run, self.lease = run, lease
        self.cut = True
        self._rides: list[GroupReady] = []
        self._steps: list[tuple[str, str]] = []  # each step's id and its write's key
        self._since = 0.0
        self._taken: set[str] = set()  # keys found taken or stale: their steps go alone
        self._types: dict[str, bool] = {}
        # Read once a delivery: a setting changed meanwhile holds from the next delivery on.
        self._max = setting_get(SettingKey.PROCESSES_STEP_GROUP_MAX)

    def open_to(self, record_type: str, key: str) -> bool:
        """Whether a write of ``record_type`` by a step with this key may join: its key was not
        found taken (or its record moved) before, and the type could be grouped when first
        asked in this delivery (``create_groupable``; the records room asks again when the
        write is made ready, and a type that stopped is made alone)."""
        if key in self._taken:
            return False
        rides = self._types.get(record_type)
        if rides is None:
            rides = self._types[record_type] = create_groupable(record_type)
        return rides

    def holds(self, pg_row_id: Any) -> bool:
        """Whether a write waiting in the group creates or changes the record ``pg_row_id``
        (an update of it is made after the group is written: it reads the record)."""
        return any(ride.record.pk == pg_row_id for ride in self._rides)

    def pending(self, pg_row_id: Any) -> Record | None:
        """The record ``pg_row_id`` as the group will write it, when the group creates it (and
        its later writes of it, if any, are updates folded into that create): an update of it
        joins without a read (``records.step_folds``). None otherwise."""
        for ride in reversed(self._rides):
            if ride.record.pk == pg_row_id:
                folded = isinstance(ride, UpdateReady) and ride.folded
                return ride.record if isinstance(ride, CreateReady) or folded else None
        return None

    def join(self, ride: GroupReady, step_id: str, key: str) -> None:
        """Add a step's write (its ledger row built, its sequence taken); the run's ``writes``
        counts it from now, so the per-run ceiling sees it. Written now if the group is full."""
        if not self._rides:
            self._since = time.monotonic()
        self._rides.append(ride)
        self._steps.append((step_id, key))
        self.run.writes += 1
        full = len(self._rides) >= self._max
        if full or (time.monotonic() - self._since) * 1000 >= RIDE_GROUP_MS:
            self.flush()

    def __len__(self) -> int:
        """How many steps wait to be written."""
        return len(self._rides)

    def flush(self, **ending: Any) -> None:
        """Write the group in one statement (nothing to do when it is empty); ``ending``: more run
        columns its lease proof sets (the run's end, ``engine.ending.run_end_riding``). Raises
        ``LeaseLost`` (nothing written) or ``RidesUndone`` (the steps before the one it names
        were written)."""
        rides, steps = self._rides, self._steps
        if not rides:
            return
        self._rides, self._steps = [], []
        gate = self.lease.gate(**{"writes": self.run.writes, **ending})
        try:
            done = group_commit(rides, gate, cut=self.cut)
        except (GroupKeyTaken, GroupStale) as taken:
            # That step goes alone (its key's record answers it; its record is locked and read
            # again); the steps before it are written again without it.
            self._undo(len(rides) - taken.index)
            self._taken.add(steps[taken.index][1])
            self._rides, self._steps = rides[: taken.index], steps[: taken.index]
            self.flush()
            raise RidesUndone(steps[taken.index][0], cancelled=False) from taken
        except LeaseLost:  # nothing written
            self._undo(len(rides))
            raise
        if done.written < len(rides):
            self._undo(len(rides) - done.written)
            raise RidesUndone(steps[done.written][0], cancelled=True)

    def _undo(self, count: int) -> None:
        """The last ``count`` writes were not written: give back their sequences and writes."""
        sequence_release(self.run, count)
        self.run.writes -= count


@dataclass
class Sent:
    """What one pass sent ahead: by plan position, the pgRowId of the step before it that its
    first function's ctx was sent with; and the record ids chosen for creates whose outcome a
    later step's ctx was sent with (the create takes that id)."""

    calls: dict[int, str | None] = field(default_factory=dict)
    chosen: dict[int, uuid.UUID] = field(default_factory=dict)

    def forget(self, at: int) -> None:
        """What was sent from position ``at`` on is not taken (the sandbox drops it): the
        steps from there are sent again, once their ctx is known."""
        self.calls = {n: pg for n, pg in self.calls.items() if n < at}
        self.chosen = {n: pick for n, pick in self.chosen.items() if n < at}


def step_key(run: ProcessRun, planned: PlannedStep, row: dict | None, row_key: str) -> str:
    """The idempotency key of the step's write: its run's (a chain), or its row's."""
    if row is None:
        return f"run:{run.run_id}:{planned.step_id}"
    return f"row:{run.process_id}:{row_key}:{planned.step_id}"


def step_functions(planned: PlannedStep) -> list[tuple[str, ...]]:
    """The functions a create, update or delete step calls, in order (``steps.step_execute``):
    its ``when`` alone (what follows runs only if it answers true), else its ``build`` and its
    address (``update_address``, ``address_value``)."""
    definition, kind = planned.definition, planned.kind
    if kind not in (StepKind.CREATE, StepKind.UPDATE, StepKind.DELETE):
        return []
    if definition.get("when") is not None:
        return [("when",)]
    paths: list[tuple[str, ...]] = []
    if kind != StepKind.DELETE:
        paths.append(("build",))
    if kind == StepKind.CREATE:
        return paths
    section = "update" if kind == StepKind.UPDATE else "delete"
    address = definition[section]
    if section == "update" and address.get("step") is not None:
        return paths  # addressed by an earlier step's outcome: no function
    paths.append((section, "pgRowId" if address.get("pgRowId") is not None else "externalId"))
    if section == "update" and address.get("expectedSyncVersion") is not None:
        paths.append(("update", "expectedSyncVersion"))
    return paths


# Steps whose functions may be ahead of the step being made: when only the next one is, the
# steps after it whose ctx is known now (creates that join the group, their ids chosen now) go
# together, in one request (the sandbox takes ``AHEAD_MAX`` calls).
AHEAD_STEPS = 8

Calls = list[tuple[tuple, dict]]


class LookAhead:
    """A delivery's look-ahead (see the module docstring): ``ctx`` builds a step's ctx, ``send``
    starts functions ahead in the sandbox, in one request (answers how many were sent)."""

    def __init__(
        self,
        run: ProcessRun,
        group: RideGroup | None,
        ctx: Callable[[PlannedStep, dict[str, dict], dict | None], dict],
        send: Callable[[Calls], int],
    ) -> None:
        self.run, self.group, self._ctx, self._send = run, group, ctx, send

    def ahead(
        self,
        plan: list[PlannedStep],
        position: int,
        steps: dict[str, dict],
        row: dict | None,
        sent: Sent,
        row_key: str = "",
    ) -> Callable[[dict[str, Any]], None] | None:
        """The callback told the outcome of the step at ``position`` (``StepScope.ahead``)."""
        if position + 1 >= len(plan):
            return None
        current = plan[position].step_id

        def start(outcome: dict[str, Any]) -> None:
            at = position + 1
            if at in sent.calls and sent.calls[at] != outcome["pgRowId"]:
                # Sent with another outcome than this step's: dropped at that call, and what
                # was sent after it with it.
                sent.forget(at)
                return
            if at + 1 in sent.calls:
                return  # the steps after the next are ahead already
            known = {**steps, current: outcome}
            batch: Calls = []
            # By position: the pgRowId its ctx has of the step before, the id that step is to
            # take (a create whose id is chosen now), where its first function is in ``batch``.
            planned: dict[int, tuple[str | None, uuid.UUID | None, int]] = {}
            if at not in sent.calls:
                planned[at] = (outcome["pgRowId"], None, len(batch))
                if not self._add(batch, plan[at], known, row):
                    return  # a guess at the step after it would only be dropped at its call
            for later in range(at + 1, min(position + AHEAD_STEPS, len(plan) - 1) + 1):
                if not self._may_group(plan[later - 1], row, row_key):
                    break  # its outcome is not known before it is made
                pick = uuid.uuid4()
                predicted = write_outcome(pick, None, Disposition.CONFIRMED)
                known = {**known, plan[later - 1].step_id: predicted}
                planned[later] = (str(pick), pick, len(batch))
                if not self._add(batch, plan[later], known, row):
                    break
            count = self._send(batch) if batch else 0
            for later, (pg_row_id, chosen, first) in planned.items():
                if first >= count:
                    break  # not sent: neither it nor what follows
                sent.calls[later] = pg_row_id
                if chosen is not None:
                    sent.chosen[later - 1] = chosen

        return start

    def _add(
        self, batch: Calls, planned: PlannedStep, steps: dict[str, dict], row: dict | None
    ) -> bool:
        """Add ``planned``'s functions to ``batch`` with the ctx it will have, in the order the
        step calls them (a create, an update or a delete only); whether there were any."""
        paths = step_functions(planned)
        if paths:
            ctx = self._ctx(planned, steps, row)
            batch.extend((planned.path + path, ctx) for path in paths)
        return bool(paths)

    def _may_group(self, planned: PlannedStep, row: dict | None, row_key: str) -> bool:
        """Whether ``planned`` is a create that would join the group."""
        return (
            self.group is not None
            and planned.kind == StepKind.CREATE
            and planned.definition.get("awaitSource") is not True
            and self.group.open_to(
                planned.definition["recordType"], step_key(self.run, planned, row, row_key)
            )
        )
