"""Helpers for engine tests: deploy TypeScript through the real deploy path, and pump the
outbound worker and run deliveries in this process until nothing moves (the same functions the
django-q2 tasks call; the worker tests run them in real qcluster processes instead)."""

from __future__ import annotations

from typing import Any

from django.test import TestCase
from django.utils import timezone

from extensions.deploy import extension_deploy
from processes.engine.runner import run_deliver
from processes.engine.wakeups import runs_due
from processes.invoke import run_invoke
from processes.models import ProcessRun, RunState
from records.models import RecordWriteState, WriteStatus
from sources.outbound import outbound_drain


def deploy(
    source: str, *, by, name: str = "processes/process.ts", siblings: dict[str, str] | None = None
):
    files = {name: source, **(siblings or {})}
    return extension_deploy(entry=name, files=files, by=by)


def pump(*, rounds: int = 200, sources: bool = True, now=None) -> None:
    """Drain every outbound queue and deliver every due run until nothing moves. Commit hooks
    (verdict signals, wake-ups) run as they would after a real commit."""
    for _ in range(rounds):
        moved = False
        if sources:
            types = set(
                RecordWriteState.reads.filter(status=WriteStatus.PENDING).values_list(
                    "record_type", flat=True
                )
            )
            for record_type in types:
                with TestCase.captureOnCommitCallbacks(execute=True):
                    report = outbound_drain(record_type=record_type)
                moved = moved or bool(getattr(report, "sent", 0) or getattr(report, "applied", 0))
        queued = list(ProcessRun.objects.filter(state=RunState.QUEUED).values_list("pk", flat=True))
        for run_id in queued + runs_due(now or timezone.now()):
            before = ProcessRun.objects.values_list("state", "pending_reason", "updated_at").get(
                pk=run_id
            )
            with TestCase.captureOnCommitCallbacks(execute=True):
                run_deliver(str(run_id))
            after = ProcessRun.objects.values_list("state", "pending_reason", "updated_at").get(
                pk=run_id
            )
            moved = moved or before != after
        if not moved:
            return


def invoke(process_id: str, body: Any, user, **kwargs) -> ProcessRun:
    return run_invoke(process_id=process_id, body=body, user=user, **kwargs)


def ledger(run: ProcessRun) -> list[tuple]:
    return [(r.step_id, r.disposition, r.refusal_code) for r in run.ledger.order_by("sequence")]


def slow_chain(process_id: str, *, steps: int, step_ms: int, numbered: bool = False) -> str:
    """A chain of ``steps`` legacy_customer creates, each busy for ``step_ms`` before it builds:
    a run that is surely in a worker's hands when a test looks. ``numbered`` adds ``step: n``."""
    step_field = ", step: %d" if numbered else ""
    step = (
        "{ id: 's%d', recordType: 'legacy_customer', build: (ctx) => {\n"
        f"    const until = Date.now() + {step_ms}; "
        "while (Date.now() < until) { /* a step that takes a while */ }\n"
        f"    return {{ parent: {{ run: ctx.runId{step_field} }} }};\n"
        "  } }"
    )
    body = ",".join(step % ((n, n) if numbered else n) for n in range(steps))
    return (
        "import { defineProcess } from '@turbobase/extensions';\n"
        "export default defineProcess({\n"
        f"  id: '{process_id}',\n"
        "  input: { type: 'object' },\n"
        f"  steps: [{body}],\n"
        "});\n"
    )
