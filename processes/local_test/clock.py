"""The virtual clock: the one seam through which a local run skips time.

Every room reads "now" as ``django.utils.timezone.now()`` — the engine's sleeps, waitFor and
awaitSource deadlines, the wake-up index, task timeouts, the guardrails' delete windows, the
outbound retry backoff, and the models' ``auto_now`` columns — and compares stored due times with
it. Swapping that one function while a local run is going moves all of them together, so a due
time is reached by advancing the clock to it rather than by waiting. Rejected: a ``now`` parameter
threaded through the engine (dozens of signatures, and the boundary would still read the real
clock) and freezegun (it also freezes ``time.monotonic``, which the sandbox's CPU budget and the
drain's wall-clock cap must keep reading for real).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.utils import timezone


class VirtualClock:
    """A clock that stands still until told to move; it never moves backwards."""

    def __init__(self, start: datetime | None = None) -> None:
        self.start = start or timezone.now()
        self._now = self.start

    def now(self) -> datetime:
        return self._now

    def advance_to(self, moment: datetime) -> None:
        """Jump to ``moment`` (a due time), never back."""
        self._now = max(self._now, moment)

    def advance(self, by: timedelta) -> None:
        self._now += by

    @property
    def elapsed(self) -> timedelta:
        return self._now - self.start


@contextmanager
def clock_installed(clock: VirtualClock) -> Iterator[VirtualClock]:
    """Make ``timezone.now()`` answer ``clock`` inside the block, in every module that reads it."""
    real = timezone.now
    timezone.now = clock.now  # the seam, see the module docstring
    try:
        yield clock
    finally:
        timezone.now = real
