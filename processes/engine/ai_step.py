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

A transient provider failure (a 5xx, a 429, a timeout, a refused connection) does not fail the
step: the run parks ``retrying`` with ``wake_at`` (``retryAt``) at now plus a backoff (1 s, 2 s,
4 s … capped at ``RETRY_BACKOFF_CAP``), holding no worker, and the delivery the lanes' watch sends
then asks again. The failed attempts are counted on the run (``transient_attempts``, durable across
workers); the ``processes.transient_retries``-th one fails the step with the provider's code as
any refusal does. Nothing is written to the ledger until the step confirms or fails: one row.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from kernel.schemas import SchemaUnusable, schema_errors, schema_validator
from processes.ai.provider import AiProviderError
from processes.ai.providers import ai_provider
from processes.codes import ProcessCode
from processes.engine.ledger import Refused
from processes.engine.plan import PlannedStep
from processes.engine.runtime import ModuleRuntime, StepCodeFailed
from processes.engine.statuses import StepStatus
from processes.engine.step_record import StepResult, StepScope, record_step
from processes.models import Disposition, ProcessRun, ProcessRunStep, SkipReason

RETRY_BACKOFF_FIRST = timedelta(seconds=1)
RETRY_BACKOFF_CAP = timedelta(minutes=5)


class TransientFailure(StepCodeFailed):
    """The provider failed in a way that asking again later may fix."""


def retry_backoff(attempts: int) -> timedelta:
    """How long to wait after the ``attempts``-th failed question: 1 s, 2 s, 4 s … capped."""
    return min(RETRY_BACKOFF_FIRST * 2 ** max(attempts - 1, 0), RETRY_BACKOFF_CAP)


def _earlier_answer(scope: StepScope, planned: PlannedStep) -> ProcessRunStep | None:
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
        if exc.transient:
            raise TransientFailure(exc.code, exc.message) from exc
        raise StepCodeFailed(exc.code, exc.message) from exc
    if schema is not None:
        _answer_check(schema, answer)
    return answer


def _answer_check(schema: Any, answer: Any) -> None:
    try:
        errors = schema_errors(schema_validator(schema), answer, first_only=True)
    except SchemaUnusable as exc:  # stored before the deploy refused it; nothing is fetched
        raise StepCodeFailed(
            ProcessCode.AI_SCHEMA_UNUSABLE,
            f"{exc.problem.at('ai.schema')}: the deployed ai.schema cannot be used: "
            f"{exc.problem.message}",
        ) from exc
    if errors:
        raise StepCodeFailed(
            ProcessCode.AI_ANSWER_INVALID, f"the answer does not fit ai.schema: {errors[0].message}"
        )


def ai_step_execute(
    scope: StepScope, planned: PlannedStep, ctx: dict, runtime: ModuleRuntime
) -> StepResult:
    """Perform an AI step (``when`` already passed); answers a ``StepResult``."""
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
    run = scope.run
    now = timezone.now()
    if run.waiting_step == planned.step_id and run.wake_at is not None and now < run.wake_at:
        # A stray delivery before retryAt (a lost wake-up sent again): park again, same time.
        return StepResult(
            StepStatus.WAIT_RETRY, retry_at=run.wake_at, attempts=run.transient_attempts
        )
    try:
        answer = _ask(runtime, planned, ctx)
    except TransientFailure as exc:
        attempts = run.transient_attempts + 1
        if attempts < setting_get(SettingKey.PROCESSES_TRANSIENT_RETRIES):
            return StepResult(
                StepStatus.WAIT_RETRY, retry_at=now + retry_backoff(attempts), attempts=attempts
            )
        return _recorded(scope, planned, StepStatus.FAILED, Disposition.FAILED, refusal=exc)
    except StepCodeFailed as exc:
        return _recorded(scope, planned, StepStatus.FAILED, Disposition.FAILED, refusal=exc)
    return _recorded(scope, planned, StepStatus.DONE, Disposition.CONFIRMED, answer=answer)


def _recorded(
    scope: StepScope,
    planned: PlannedStep,
    status: StepStatus,
    disposition: str,
    *,
    refusal: StepCodeFailed | None = None,
    answer: Any = None,
) -> Any:
    """The step's one ledger row; the run's count of transient failures starts again at 0."""
    with transaction.atomic():
        if refusal is not None:
            row = record_step(
                scope,
                planned,
                disposition=disposition,
                refusal=Refused(refusal.code, "ai", refusal.message),
            )
        else:
            row = record_step(scope, planned, disposition=disposition, answer=answer)
        if scope.run.transient_attempts:
            ProcessRun.objects.filter(pk=scope.run.pk).update(transient_attempts=0)
            scope.run.transient_attempts = 0
    return StepResult(status, row)
