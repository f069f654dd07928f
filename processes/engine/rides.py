"""A delivery's ride group: consecutive create steps committed together in one statement.

A chain's create step that can ride (``records.boundary.create_rides``) is checked and built at once
(``record_create_ready``) but not written: its record, trail row and ledger row join the delivery's
group, and the walk goes on to the next step with the outcome the step will have (its record's id is
chosen before the write). The group is written — the lease proof and every row of every step in it —
by one autocommitted statement (``rides_commit``): at the setting ``processes.step_group_max`` steps
(1: every step alone), once ``RIDE_GROUP_MS`` have passed since its first step, and always before
anything else touches the database for the run — a step that is not a riding create, a refusal, a
``ctx.query`` read, the walk's end. So nothing outside the delivery can tell a grouped step from one
committed alone, except that it lands with its neighbours; a worker that dies loses only the group's
uncommitted steps, which the next delivery performs again (nothing was written).

A cancel is read back by the group's statement, as by any step's: with a cancel pending, the
statement writes the group's first step only — the step in flight from the outside's point of view —
and the run stops there, as it stops at the next step boundary when steps commit alone.
"""

from __future__ import annotations

import time

from guardrails.settings import setting_get
from processes.engine.lease import Lease
from processes.engine.ledger import sequence_release
from processes.models import ProcessRun
from records.boundary import Ride, RideKeyTaken, create_rides, rides_commit

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
        self._rides: list[Ride] = []
        self._steps: list[str] = []
        self._since = 0.0
        self._taken: set[str] = set()  # keys found taken: their steps do not ride again
        self._types: dict[str, bool] = {}

    def open_to(self, record_type: str, idempotency_key: str) -> bool:
        """Whether a create of ``record_type`` with this key may ride: its key was not found
        taken before, and the type rode when first asked in this delivery (``create_rides``;
        ``record_create_ready`` asks again, and a type that stopped riding is made alone)."""
        if idempotency_key in self._taken:
            return False
        rides = self._types.get(record_type)
        if rides is None:
            rides = self._types[record_type] = create_rides(record_type)
        return rides

    def join(self, ride: Ride, step_id: str) -> None:
        """Add a step's ride (its ledger row built, its sequence taken); the run's ``writes``
        counts it from now, so the per-run ceiling sees it. Written now if the group is full."""
        if not self._rides:
            self._since = time.monotonic()
        self._rides.append(ride)
        self._steps.append(step_id)
        self.run.writes += 1
        full = len(self._rides) >= setting_get("processes.step_group_max")
        if full or (time.monotonic() - self._since) * 1000 >= RIDE_GROUP_MS:
            self.flush()

    def flush(self) -> None:
        """Write the group in one statement (nothing to do when it is empty). Raises
        ``LeaseLost`` (nothing written) or ``RidesUndone`` (the steps before the one it names
        were written)."""
        rides, steps = self._rides, self._steps
        if not rides:
            return
        self._rides, self._steps = [], []
        gate, params = self.lease.gate(writes=self.run.writes)
        try:
            done = rides_commit(rides, gate, params, cut=self.cut)
        except RideKeyTaken as taken:
            self._undo(len(rides) - taken.index)
            self._taken.add(rides[taken.index].record.idempotency_key or "")
            self._rides, self._steps = rides[: taken.index], steps[: taken.index]
            self.flush()
            raise RidesUndone(steps[taken.index], cancelled=False) from taken
        if done.answer is None:
            self._undo(len(rides))
        self.lease.gate_answered(done.answer)  # LeaseLost when the gate answered no row
        if done.written < len(rides):
            self._undo(len(rides) - done.written)
            raise RidesUndone(steps[done.written], cancelled=True)

    def _undo(self, count: int) -> None:
        """The last ``count`` rides were not written: give back their sequences and writes."""
        sequence_release(self.run, count)
        self.run.writes -= count
