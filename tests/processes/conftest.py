"""Fixtures of the processes tests: processes deployed from TypeScript through the real deploy,
runs performed inline (``drain_runs``), and the source's verdicts delivered inline too.

``drain_runs()`` is what the lanes' workers and the sweeper do, done in this process: it sends
every pending outbound write (the sandbox source answers), then performs one delivery of every run
that a worker would pick up — queued, handed back, or parked on a wait whose verdict, clock or
budget has come — until none is left. Tests with real ``qcluster`` workers live elsewhere.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connections
from django.db.models import Q
from django.utils import timezone

from extensions.deploy import DeployResult, extension_deploy
from extensions.store import store_forget
from processes.engine.runner import run_deliver
from processes.engine.waits import verdict_in
from processes.models import ProcessRun, RunState
from records.models import RecordWriteState, WriteStatus
from sources.outbound import outbound_drain

# A chain of two creates that needs no source verdict: the quickest process to run end to end.
TWO_NOTES = """\
import { defineProcess } from '@turbobase/extensions';

export default defineProcess({
  id: 'acme:two-notes',
  description: 'Two sales orders, the second naming the first',
  input: {
    type: 'object',
    properties: { memo: { type: 'string' } },
    required: ['memo'],
    additionalProperties: false,
  },
  steps: [
    { id: 'first', recordType: 'salesOrder', build: (ctx) => ({ parent: { memo: ctx.input.memo } }) },
    {
      id: 'second',
      recordType: 'salesOrder',
      build: (ctx) => ({ parent: { memo: ctx.input.memo + ' (2)', pair_of: ctx.steps.first?.pgRowId } }),
    },
  ],
});
"""

# The second step is refused by the boundary itself (a migration_item needs legacy_id).
FAILS_AT_SECOND = """\
import { defineProcess } from '@turbobase/extensions';

export default defineProcess({
  id: 'acme:fails-at-second',
  input: { type: 'object' },
  steps: [
    { id: 'order', recordType: 'salesOrder', build: (ctx) => ({ parent: { memo: 'kept' } }) },
    { id: 'item', recordType: 'migration_item', build: (ctx) => ({ parent: { note: 'no legacy id' } }) },
  ],
  onFailure: 'stop',
});
"""


def process_deploy(source: str, *, by: Any, name: str = "process.ts") -> DeployResult:
    """Deploy one process file through the same service ``POST /v1/extensions`` calls."""
    entry = f"processes/{name}"
    return extension_deploy(entry=entry, files={entry: source}, by=by)


def _due(now) -> Q:
    """Runs a worker would perform now: queued, handed back, or parked on a wait that is over."""
    free = Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    queued = Q(state=RunState.QUEUED)
    handed_back = Q(state=RunState.RUNNING, pending_reason__in=["queued", "running"])
    wait_over = Q(state=RunState.RUNNING) & (Q(wait_deadline__lte=now) | Q(wake_at__lte=now))
    return free & (queued | handed_back | wait_over)


def _verdict_in(run: ProcessRun) -> bool:
    """The sweeper's look: the verdict is folded into the waiting ledger row (or decided)."""
    return verdict_in(run.pk)


def outbound_drain_all() -> None:
    """Let the sandbox source answer every pending write, type by type, in order."""
    types = (
        RecordWriteState.reads.filter(status=WriteStatus.PENDING)
        .values_list("record__record_type", flat=True)
        .distinct()
    )
    for record_type in sorted(set(types)):
        outbound_drain(record_type=record_type)


def drain_runs(*, max_rounds: int = 50) -> int:
    """Perform deliveries inline until no run is due; returns how many deliveries ran."""
    delivered = 0
    for _ in range(max_rounds):
        outbound_drain_all()
        now = timezone.now()
        due = list(
            ProcessRun.objects.filter(_due(now)).order_by("created_at").values_list("pk", flat=True)
        )
        parked = ProcessRun.objects.filter(state=RunState.RUNNING, pending_reason="awaitingSource")
        due += [run.pk for run in parked if run.pk not in due and _verdict_in(run)]
        if not due:
            return delivered
        for run_id in due:
            run_deliver(str(run_id))
            delivered += 1
    raise AssertionError(f"runs still due after {max_rounds} rounds")


@pytest.fixture(autouse=True)
def _forget_store() -> Iterator[None]:
    store_forget()
    yield
    store_forget()


@pytest.fixture
def deploy(admin_user) -> Callable[..., DeployResult]:
    """``deploy(SOURCE)`` stores a process as the administrator and answers the deploy result."""

    def _deploy(source: str, name: str = "process.ts") -> DeployResult:
        return process_deploy(source, by=admin_user, name=name)

    return _deploy


@pytest.fixture
def two_notes(deploy) -> str:
    return deploy(TWO_NOTES, "two-notes.ts").id


def wait_until(predicate: Callable[[], bool], *, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


class InlineWorker:
    """A thread that plays the lanes' workers: ``drain_runs()`` every few milliseconds.

    For tests that need a run to progress while a request waits (``?mode=sync``, ``logs --follow``).
    Use with ``transactional_db``: the thread has its own connection and sees committed rows only.
    """

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="inline-worker", daemon=True)
        self.errors: list[Exception] = []

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    drain_runs()
                except Exception as exc:  # noqa: BLE001 — surfaced by stop(): a worker fault fails the test
                    self.errors.append(exc)
                    return
                self._stop.wait(self.interval)
        finally:
            connections.close_all()

    def start(self) -> InlineWorker:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        if self.errors:
            raise self.errors[0]


@pytest.fixture
def inline_worker(transactional_db) -> Iterator[InlineWorker]:
    worker = InlineWorker().start()
    yield worker
    worker.stop()
