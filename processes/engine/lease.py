"""A delivery's hold on its run: taken by a conditional UPDATE, kept alive by a heartbeat,
checked inside every transaction that writes for the run.

The run row's ``lease_owner`` names the one delivery that may write for the run and
``lease_until`` says until when. A heartbeat renews it (conditionally, on ``lease_owner``) every
third of the lease while the delivery works (``engine.lease_renewal``: one thread per process),
so a long step — a slow ``ctx.query``, a ``build`` that computes for a while — never lets a
second worker take a live run. If the worker dies, renewal stops and the lease runs out; the
next delivery resumes at the first unrecorded step.

Should a delivery lose its lease anyway (frozen past it: the process was stopped, the database
unreachable), ``hold`` fails inside the step's transaction and the step rolls back: a delivery
that lost its lease writes nothing. On PostgreSQL the UPDATE also locks the run row until the
step commits, so a claim by another worker waits for the step and then finds the lease renewed.

A step's ledger row proves the lease with ``hold_writing``: on PostgreSQL one statement renews the
lease, inserts the row only if the lease is ours, and reads the run's cancel request back
(``cancel_seen``), so the stop check at the next step boundary costs no SELECT of its own.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import models
from django.utils import timezone

from kernel.deployment import run_lease_seconds
from processes.engine.lease_renewal import renewals
from processes.models import ProcessRun
from records.sql_writes import proof_insert, proof_run
from records.step_writes import LeaseProof

logger = logging.getLogger("turbobase.processes.engine")


def lease_seconds() -> float:
    return run_lease_seconds()


class LeaseLost(Exception):
    """Another delivery holds the run now (ours ran out): this one must write nothing more."""


class Lease:
    """One delivery's hold on one run (``token`` is written to ``lease_owner`` by the claim)."""

    def __init__(self, run_id, token: str) -> None:
        self.run_id = run_id
        self.token = token
        self.seconds = lease_seconds()
        self._stop = threading.Event()
        self.next_beat = float("inf")  # when the renewals' thread renews it next
        # The run's cancel_requested as the last step's transaction read it (or the claim did).
        self.cancel_seen = False
        # The run's process's switch as the claim read it (None: not read with the claim).
        self.switch_seen: bool | None = None
        # Run columns every write of this delivery to the run row sets too (``carry``).
        self.carried: dict[str, Any] = {}
        # When this delivery took the run: its working time, added to the run's as it lets go.
        # Monotonic, so a wall-clock jump (or the local run's virtual clock) is not work.
        self.taken_at = time.monotonic()
        self._worked_taken = False

    def hold(self, **columns: Any) -> None:
        """Inside a write's transaction: prove we still hold the run and extend the lease (and set
        ``columns`` on the run row in the same statement). Raises ``LeaseLost`` otherwise. The
        statement reads the run's cancel request back (``cancel_seen``): every hold — a step's, a
        migration batch's, the heartbeat's — is also the stop check's look at it."""
        proof_run(self.gate(**columns))

    def hold_writing(self, row: models.Model, **columns: Any) -> None:
        """``hold(**columns)`` and INSERT ``row`` (a ledger row) in the same transaction — on
        PostgreSQL in one statement (``records.sql_writes.proof_insert``): no lease, no insert
        (``LeaseLost``); the run's ``cancel_requested`` is read back as ``cancel_seen``."""
        proof_insert(self.gate(**columns), row)

    def gate(self, **columns: Any) -> LeaseGate:
        """This lease as the records room's ``StepGate``: its proof renews the lease (and sets
        ``columns``, and the carried ones) and answers ``cancel_requested`` — alone (``hold``),
        before a ledger row (``hold_writing``), or as the gate of a group of writes that carries
        the ledger rows in its own statement (``records.step_writes.group_commit``)."""
        return LeaseGate(self, {**self.carried, **columns})

    def carry(self, **columns: Any) -> None:
        """Set ``columns`` on the run row with every later write of this delivery to it — each
        lease proof, and the end, park or release of the run — instead of a statement of their
        own (a chain's ``slices``, set as its walk starts). Idempotent values only: they may be
        written more than once."""
        self.carried.update(columns)

    def proved(self, answer: Any) -> None:
        """What a proof answered: None (no row) when the lease was taken over."""
        if answer is None:
            raise LeaseLost(f"run {self.run_id}: this delivery's lease was taken over")
        self.cancel_seen = bool(answer)

    def worked_ms(self) -> int:
        """The milliseconds this delivery has held the run so far."""
        return int((time.monotonic() - self.taken_at) * 1000)

    def worked_take(self) -> int:
        """This delivery's working time, to add to the run's as it lets go: answered once, 0 after,
        so a delivery that lets go one way and then frees the lease another adds it once."""
        if self._worked_taken:
            return 0
        self._worked_taken = True
        return self.worked_ms()

    def let_go(self) -> None:
        """The delivery gave the run back (ended, parked): the heartbeat stops renewing."""
        self._stop.set()

    def owned(self):
        """The run row, narrowed to this delivery's lease (for a conditional UPDATE)."""
        return ProcessRun.objects.filter(pk=self.run_id, lease_owner=self.token)

    # -- heartbeat (``engine.lease_renewal``: one thread renews every delivery's lease) --------

    def heartbeat_start(self) -> None:
        self.next_beat = time.monotonic() + self.seconds / 3
        renewals.add(self)

    def heartbeat_stop(self) -> None:
        self._stop.set()
        renewals.discard(self)

    def beat(self) -> bool:
        """One renewal, on the renewals' thread; whether to go on renewing this lease."""
        if self._stop.is_set():
            return False
        try:
            self.hold()
        except LeaseLost:
            if not self._stop.is_set():  # not merely our own letting go, racing this beat
                logger.warning(
                    "run %s: lease lost; this delivery will write nothing more", self.run_id
                )
            return False
        except Exception:  # the database blinked: try again next beat, the lease has slack
            logger.exception("run %s: could not renew the lease", self.run_id)
        self.next_beat = time.monotonic() + self.seconds / 3
        return True


@dataclass(frozen=True)
class LeaseGate:
    """A delivery's lease as ``records.step_writes.StepGate``: the proof renews the lease where
    the delivery's token holds it, setting ``sets`` too, and answers the run's cancel request."""

    lease: Lease
    sets: dict[str, Any]

    def proof(self) -> LeaseProof:
        until = timezone.now() + timedelta(seconds=self.lease.seconds)
        return LeaseProof(
            model=ProcessRun,
            pk=self.lease.run_id,
            owner_field="lease_owner",
            owner=self.lease.token,
            sets={"lease_until": until, **self.sets},
            answer_field="cancel_requested",
        )

    def proved(self, answer: Any) -> None:
        self.lease.proved(answer)
