"""What a delivery tells the operator: its log lines, its trace spans, its metrics.

Wrapped around the engine from outside (the lane task, ``processes.tasks``, and a sync run's
request, ``processes.sync_run``), never inside it:

- logs: the delivery's lines carry ``run_id`` and ``process_id`` (``kernel.log_context``), each
  step's lines its ``step_id`` too; one INFO line when a delivery starts and one when it ends,
  with the state the run is left in.
- traces (only when tracing is on, ``kernel.tracing``): a span per delivery (one run slice), in
  the run's own trace — the request's that invoked it, else the first slice's, stored on the run
  (``ProcessRun.trace_id``) so every later slice joins it — and a span per step, drawn from the
  step's start to its ledger row (``step_observed``, called as the row is made).
- metrics (``kernel.metrics``): runs started (a new run row) and finished (``run_ended``, from the
  one door that ends runs), step durations by kind.
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models.signals import post_save, pre_save
from django.utils import timezone
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags

from kernel.log_context import log_context
from kernel.metrics import RUNS_FINISHED, RUNS_STARTED, STEP_SECONDS
from kernel.tracing import trace_id_hex, tracer
from processes.models import TERMINAL_STATES, Disposition, ProcessRun
from processes.planning import is_planning

logger = logging.getLogger("turbobase.deliveries")

Delivered = ProcessRun | None


def delivery_observed(run: ProcessRun, deliver: Callable[[], Delivered]) -> Delivered:
    """Perform ``deliver()`` (one delivery of the claimed ``run``) logged, traced and counted."""
    with log_context(run_id=run.pk, process_id=run.process_id), _slice_span(run) as span:
        logger.info(
            "run %s (%s): delivery %s started",
            run.pk,
            run.process_id,
            run.delivery,
            extra={"delivery": run.delivery, "mode": run.mode},
        )
        left = deliver()
        state = (left or run).state
        pending = (left or run).pending_reason
        span.set_attribute("turbobase.run.state", state)
        if state in TERMINAL_STATES:
            logger.info(
                "run %s (%s): ended %s",
                run.pk,
                run.process_id,
                state,
                extra={"state": state, "delivery": run.delivery},
            )
        else:
            logger.info(
                "run %s (%s): delivery %s left it %s (%s)",
                run.pk,
                run.process_id,
                run.delivery,
                state,
                pending or "-",
                extra={"state": state, "pending_reason": pending, "delivery": run.delivery},
            )
    return left


@contextlib.contextmanager
def _slice_span(run: ProcessRun) -> Iterator[trace.Span]:
    """The delivery's span, in the run's trace (a new trace, stored on the run, if it has none):
    under the request's span when the request that invoked the run delivers it (``?mode=sync``)."""
    span_tracer = tracer()
    parent = None
    if run.trace_id and trace_id_hex() != run.trace_id:
        # The run's trace, joined from its id alone: a remote parent whose span id is made up.
        remote = SpanContext(
            trace_id=int(run.trace_id, 16),
            span_id=random.getrandbits(64) or 1,
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
        parent = trace.set_span_in_context(NonRecordingSpan(remote))
    attributes: dict[str, str | int] = {
        "turbobase.process_id": run.process_id,
        "turbobase.run_id": str(run.pk),
        "turbobase.run.mode": run.mode,
        "turbobase.run.delivery": run.delivery,
    }
    with span_tracer.start_as_current_span(
        "run slice", context=parent, attributes=attributes
    ) as span:
        trace_id = trace_id_hex(span)
        if trace_id and not run.trace_id:
            ProcessRun.objects.filter(pk=run.pk, trace_id="").update(trace_id=trace_id)
            run.trace_id = trace_id
        yield span


def step_observed(
    run: ProcessRun, *, step_id: str, kind: str, disposition: str, started_at: datetime | None
) -> None:
    """One step's ledger row is being made: its duration counted and its span recorded."""
    if started_at is None or is_planning():  # no step produced it, or a plan's (never kept)
        return
    now = timezone.now()
    STEP_SECONDS.labels(kind=kind or "unknown").observe(
        max((now - started_at).total_seconds(), 0.0)
    )
    if not trace.get_current_span().get_span_context().is_valid:
        return  # tracing is off, or no slice span is open
    span = tracer().start_span(
        f"step {step_id}",
        start_time=int(started_at.timestamp() * 1e9),
        attributes={
            "turbobase.process_id": run.process_id,
            "turbobase.run_id": str(run.pk),
            "turbobase.step_id": step_id,
            "turbobase.step.kind": kind,
            "turbobase.step.outcome": disposition,
        },
    )
    if disposition == Disposition.FAILED:
        span.set_status(Status(StatusCode.ERROR, "the step failed"))
    span.end(end_time=int(now.timestamp() * 1e9))


def run_ended(run: ProcessRun, state: str) -> None:
    """A run ended (``engine.ending.run_end``): counted by process and final state once that
    commits (a plan's run, always rolled back, is never counted)."""
    counter = RUNS_FINISHED.labels(process=run.process_id, outcome=state)
    transaction.on_commit(counter.inc)


def _run_trace_take(sender: Any, instance: ProcessRun, raw: bool = False, **kwargs: Any) -> None:
    """A new run invoked inside a traced request belongs to the request's trace."""
    if not raw and instance._state.adding and not instance.trace_id:
        instance.trace_id = trace_id_hex()


def _run_counted(
    sender: Any, instance: ProcessRun, created: bool, raw: bool = False, **_: Any
) -> None:
    if raw or not created:
        return
    # Counted once the run's row commits: an invoke rolled back, or a plan, started nothing.
    transaction.on_commit(RUNS_STARTED.labels(process=instance.process_id).inc)
    if instance.state in TERMINAL_STATES:  # written ended: refused before its first step
        finished = RUNS_FINISHED.labels(process=instance.process_id, outcome=instance.state)
        transaction.on_commit(finished.inc)


def observe_connect() -> None:
    """``ProcessesConfig.ready``: the run signals."""
    pre_save.connect(_run_trace_take, sender=ProcessRun, dispatch_uid="processes.observe.trace")
    post_save.connect(_run_counted, sender=ProcessRun, dispatch_uid="processes.observe.started")
