"""A delivery's hold on its run: taken by a conditional UPDATE, kept alive by a heartbeat,
checked inside every transaction that writes for the run.

The run row's ``lease_owner`` names the one delivery that may write for the run and
``lease_until`` says until when. A heartbeat thread renews it (conditionally, on ``lease_owner``)
every third of the lease while the delivery works, so a long step — a slow ``ctx.query``, a
``build`` that computes for a while — never lets a second worker take a live run. If the worker
dies, renewal stops and the lease runs out; the next delivery resumes at the first unrecorded step.

Should a delivery lose its lease anyway (frozen past it: the process was stopped, the database
unreachable), ``hold`` fails inside the step's transaction and the step rolls back: a delivery
that lost its lease writes nothing. On PostgreSQL the UPDATE also locks the run row until the
step commits, so a claim by another worker waits for the step and then finds the lease renewed.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from processes.models import ProcessRun

logger = logging.getLogger("turbobase.processes.engine")


def lease_seconds() -> float:
    return float(getattr(settings, "PROCESS_RUN_LEASE_S", 120))


class LeaseLost(Exception):
    """Another delivery holds the run now (ours ran out): this one must write nothing more."""


class Lease:
    """One delivery's hold on one run (``token`` is written to ``lease_owner`` by the claim)."""

    def __init__(self, run_id, token: str) -> None:
        self.run_id = run_id
        self.token = token
        self.seconds = lease_seconds()
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    def hold(self, **columns) -> None:
        """Inside a write's transaction: prove we still hold the run and extend the lease (and set
        ``columns`` on the run row in the same statement). Raises ``LeaseLost`` otherwise."""
        now = timezone.now()
        held = ProcessRun.objects.filter(pk=self.run_id, lease_owner=self.token).update(
            lease_until=now + timedelta(seconds=self.seconds), **columns
        )
        if not held:
            raise LeaseLost(f"run {self.run_id}: this delivery's lease was taken over")

    def let_go(self) -> None:
        """The delivery gave the run back (ended, parked): the heartbeat stops renewing."""
        self._stop.set()

    def owned(self):
        """The run row, narrowed to this delivery's lease (for a conditional UPDATE)."""
        return ProcessRun.objects.filter(pk=self.run_id, lease_owner=self.token)

    # -- heartbeat ----------------------------------------------------------------------------

    def heartbeat_start(self) -> None:
        self._heartbeat = threading.Thread(
            target=self._beat, name=f"lease {self.run_id}", daemon=True
        )
        self._heartbeat.start()

    def heartbeat_stop(self) -> None:
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=self.seconds)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.seconds / 3):
                try:
                    self.hold()
                except LeaseLost:
                    if not self._stop.is_set():  # not merely our own letting go, racing this beat
                        logger.warning(
                            "run %s: lease lost; this delivery will write nothing more", self.run_id
                        )
                    return
                except Exception:  # the database blinked: try again next beat, the lease has slack
                    logger.exception("run %s: could not renew the lease", self.run_id)
        finally:
            connection.close()  # this thread's own connection
