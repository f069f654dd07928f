"""The heartbeat of every delivery in this process: one thread renewing each live lease.

A delivery registers its lease as it starts working and drops it as it lets go; the thread
renews each one a third of a lease after its last renewal (``Lease.beat``), so a long step never
lets a second worker take a live run. One thread for the process, not one per delivery: starting
and joining a thread cost more than a one-step delivery's own statements, and most deliveries
end long before their first renewal is due. The thread takes a database connection only for a
round of renewals and closes it after, so an idle worker holds none for it.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Protocol

from django.db import connection

# How long the thread sleeps with no renewal due (a lease registered meanwhile is due later).
IDLE_SECONDS = 10.0


class Renewable(Protocol):
    """A lease as the renewals see it (``processes.engine.lease.Lease``)."""

    next_beat: float  # time.monotonic() of its next renewal

    def beat(self) -> bool:
        """Renew once; whether to go on renewing it."""
        ...


class LeaseRenewals:
    """The registered leases and the thread renewing them (started on first use, again after a
    fork: a worker forked from a parent that had one does not inherit the thread)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._leases: set[Renewable] = set()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._wake_at = float("inf")

    def add(self, lease: Renewable) -> None:
        with self._changed:
            self._leases.add(lease)
            if self._pid != os.getpid() or self._thread is None or not self._thread.is_alive():
                self._pid = os.getpid()
                self._thread = threading.Thread(
                    target=self._run, name="lease renewals", daemon=True
                )
                self._thread.start()
            elif lease.next_beat < self._wake_at:  # due before the thread next looks
                self._changed.notify()

    def discard(self, lease: Renewable) -> None:
        with self._changed:
            self._leases.discard(lease)

    def _due(self) -> list[Renewable]:
        """The leases due now; with none due, wait until the first one is (or one is added)."""
        with self._changed:
            now = time.monotonic()
            due = [lease for lease in self._leases if lease.next_beat <= now]
            if not due:
                self._wake_at = min(
                    (lease.next_beat for lease in self._leases), default=now + IDLE_SECONDS
                )
                self._changed.wait(self._wake_at - now)
            return due

    def _run(self) -> None:
        while True:
            due = self._due()
            if not due:
                continue
            try:
                for lease in due:
                    if not lease.beat():
                        self.discard(lease)
            finally:
                connection.close()  # this thread's own connection, until the next round


renewals = LeaseRenewals()
