"""An AI step: ask the configured provider once per run and row, keep the answer on the ledger.

``{ id, ai: { prompt: (ctx) => string, schema? } }`` writes no record. Its answer is on
``ctx.steps[id].answer`` for later steps. The seed's rule — "an AI step reuses its answer for the
rest of the run" — is kept by the ledger: before asking, the step looks for an answer this run
already has for the same step and row; a re-delivery finds its own row (the runner's usual
resume), and a later slice that is offered the same row again records a ``skipped`` row carrying
that answer (``skip_reason = reused``) without asking or billing again. A new run asks again.

The provider is called outside any transaction (it is a network call and may be slow); only
the ledger row is written in one. A worker killed between the answer and the row asks again on
the next delivery: at most one extra question, never a lost or doubled write.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from jsonschema import Draft202012Validator

from processes.ai.providers import AiProviderError, ai_provider
from processes.codes import ProcessCode
from processes.engine.ledger import Refused
from processes.engine.plan import PlannedStep
from processes.engine.runtime import ModuleRuntime, StepCodeFailed
from processes.engine.statuses import StepStatus
from processes.models import Disposition, ProcessRunStep, SkipReason


def _earlier_answer(scope: Any, planned: PlannedStep) -> ProcessRunStep | None:
    return (
        scope.run.ledger.filter(
            step_id=planned.step_id,
            row_key=scope.row_key,
            action="ai",
            disposition__in=(Disposition.CONFIRMED, Disposition.SKIPPED),
        )
        .exclude(skip_reason__in=(SkipReason.DECLINED, SkipReason.NOT_REACHED))
        .order_by("sequence")
        .first()
    )


def _ask(runtime: ModuleRuntime, planned: PlannedStep, ctx: dict) -> Any:
    prompt = runtime.call(planned.path + ("ai", "prompt"), ctx)
    if not isinstance(prompt, str) or not prompt.strip():
        raise StepCodeFailed(
            ProcessCode.AI_PROMPT_INVALID, "ai.prompt must return a non-empty string"
        )
    schema = planned.definition["ai"].get("schema")
    try:
        answer = ai_provider().answer(prompt=prompt, schema=schema)
    except AiProviderError as exc:
        raise StepCodeFailed(exc.code, exc.message) from exc
    if schema is not None:
        error = next(iter(Draft202012Validator(schema).iter_errors(answer)), None)
        if error is not None:
            raise StepCodeFailed(
                ProcessCode.AI_ANSWER_INVALID, f"the answer does not fit ai.schema: {error.message}"
            )
    return answer


def ai_step_execute(scope: Any, planned: PlannedStep, ctx: dict, runtime: ModuleRuntime) -> Any:
    """Perform an AI step (``when`` already passed); answers a ``StepResult``."""
    from processes.engine.steps import StepResult, record_step

    earlier = _earlier_answer(scope, planned)
    if earlier is not None:
        with transaction.atomic():
            row = record_step(
                scope,
                planned,
                disposition=Disposition.SKIPPED,
                skip_reason=SkipReason.REUSED,
                answer=earlier.answer,
            )
        return StepResult(StepStatus.DONE, row)
    try:
        answer = _ask(runtime, planned, ctx)
    except StepCodeFailed as exc:
        with transaction.atomic():
            row = record_step(
                scope,
                planned,
                disposition=Disposition.FAILED,
                refusal=Refused(exc.code, "ai", exc.message),
            )
        return StepResult(StepStatus.FAILED, row)
    with transaction.atomic():
        row = record_step(scope, planned, disposition=Disposition.CONFIRMED, answer=answer)
    return StepResult(StepStatus.DONE, row)
