"""The outbound worker's side of a verdict: a source's answers to a run of writes, folded.

The final answers of a run (confirmed / refused / settle conflict) are folded by
``records.verdicts.verdicts_apply`` in one transaction; a transient answer (it can only end a
run) is counted by ``verdict_transient`` and its write backs off (``outbound_backoff``), staying
at the head of its type. A confirm whose link back fails here (another row already holds that
id) becomes a settle conflict: the run is then applied one answer at a time to find it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from django.db import IntegrityError
from django.utils import timezone

from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from records.models import RecordWriteState, WriteStatus
from records.outcomes import VerdictKind
from records.verdicts import Verdict, verdict_apply, verdict_transient, verdicts_apply
from sources.adapters.base import Outcome
from sources.conf import outbound_conf
from sources.pacing import paced_until


def _verdict(outcome: Outcome) -> Verdict:
    return Verdict(
        outcome.kind,
        external_id=outcome.external_id,
        code=outcome.code,
        field=outcome.field,
        message=outcome.message,
    )


def outbound_answers_apply(answers: Sequence[tuple[RecordWriteState, Outcome]]) -> None:
    """Record a run's answers, in order, through ``records.verdicts``: its final answers in one
    transaction, then its transient last one (if any)."""
    finals = [(state, outcome) for state, outcome in answers if outcome.is_final]
    if finals:
        try:
            verdicts_apply([(state.pk, _verdict(outcome)) for state, outcome in finals])
        except IntegrityError:  # a confirmed id another row holds: find it one answer at a time
            for state, outcome in finals:
                outbound_outcome_apply(state=state, outcome=outcome)
    for state, outcome in answers:
        if not outcome.is_final:
            outbound_outcome_apply(state=state, outcome=outcome)


def outbound_backoff(*, attempts: int) -> float:
    """Seconds to wait after the ``attempts``-th failed attempt."""
    conf = outbound_conf()
    if attempts >= setting_get(SettingKey.SOURCES_MAX_ATTEMPTS):
        return conf.retry_cap_seconds
    return min(conf.retry_cap_seconds, conf.retry_base_seconds * 2 ** max(attempts - 1, 0))


def outbound_outcome_apply(*, state: RecordWriteState, outcome: Outcome) -> None:
    """Record the source's answer through ``records.verdicts`` (the only code that moves a record)."""
    if not RecordWriteState.reads.filter(pk=state.pk, status=WriteStatus.PENDING).exists():
        return  # decided meanwhile (a lease that ran out mid-send): the first verdict stands
    if outcome.kind == VerdictKind.TRANSIENT:
        attempts = state.attempts + 1
        delay = outbound_backoff(attempts=attempts)
        # Slowed down: due exactly when its source's backoff ends (sources.pacing), not before.
        next_attempt_at = (
            paced_until(state.source_system) if outcome.slow_down else None
        ) or timezone.now() + timedelta(seconds=delay)
        message = outcome.message
        if attempts >= setting_get(SettingKey.SOURCES_MAX_ATTEMPTS):
            message = (
                f"{message} — still failing after {attempts} attempts; retrying every {delay:g}s"
            )
        verdict_transient(
            write_state_id=state.pk,
            message=message,
            next_attempt_at=next_attempt_at,
        )
        return
    try:
        verdict_apply(write_state_id=state.pk, verdict=_verdict(outcome))
    except IntegrityError:
        if outcome.kind != VerdictKind.CONFIRMED:
            raise
        # Another row already holds that id (an inbound copy arrived first): keep the id, let settle link it.
        verdict_apply(
            write_state_id=state.pk,
            verdict=Verdict(
                VerdictKind.SETTLE_CONFLICT,
                external_id=outcome.external_id,
                message=f"{state.source_system} created {outcome.external_id}, but linking it back failed: "
                "another row already holds that id",
            ),
        )
