"""A waitFor step: park the run until a matching event comes (or the timeout), then record it.

``{ id, waitFor: { event, match?, timeout } }`` writes no record. The first delivery that reaches
the step works out ``match`` (the author's function runs once, before any transaction) and makes
the step's ``EventWait`` — one per run and step, so a delivery that dies here and is sent again
finds it — then the run parks ``awaitingInput`` with the timeout as its due time
(``ChainRunner.wait_input``, which also looks for an event that came before the wait). A later
delivery (an event's wake-up, or the timeout's) finds the wait decided and writes the step's one
ledger row from it: ``confirmed`` with ``{event: {eventId, name, data, key, receivedAt}}``, or
with ``{event: null}`` when the timeout came first. The wait leaves ``waiting`` once (a
conditional UPDATE) and the ledger key (run, step, row, visit) is unique, so an event resumes a
wait once, however many deliveries look.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction
from django.utils import timezone
from rest_framework.exceptions import ParseError

from kernel.errors import TurbobaseError
from kernel.input import data_check
from processes.codes import ProcessCode
from processes.durations import duration_parse
from processes.engine.ledger import Refused
from processes.engine.plan import PlannedStep
from processes.engine.runtime import ModuleRuntime, StepCodeFailed
from processes.engine.statuses import StepStatus
from processes.engine.step_record import StepResult, StepScope, record_step, step_wait_open
from processes.events.models import EventWait, WaitState
from processes.events.serializers import event_out
from processes.events.service import EVENT_DATA_MAX_CHARS
from processes.models import Disposition


def wait_of(scope: StepScope, planned: PlannedStep) -> EventWait | None:
    """The wait an earlier delivery made for this step, if any."""
    return EventWait.objects.filter(run_id=scope.run.pk, step_id=planned.step_id).first()


def _match(runtime: ModuleRuntime, planned: PlannedStep, ctx: dict) -> dict:
    """What ``match`` returns now ({} without one): a JSON object the event's data must hold."""
    if planned.definition["waitFor"].get("match") is None:
        return {}
    match = runtime.call(planned.path + ("waitFor", "match"), ctx)
    if match is None:
        return {}
    if not isinstance(match, dict):
        raise StepCodeFailed(
            ProcessCode.WAIT_MATCH_INVALID, f"waitFor.match must return an object, not {match!r}"
        )
    try:
        data_check(match, path="match")  # storable text, as an event's data must be
    except (TurbobaseError, ParseError) as exc:
        message = getattr(exc, "message", None) or str(exc)
        raise StepCodeFailed(ProcessCode.WAIT_MATCH_INVALID, f"waitFor.match: {message}") from exc
    if len(json.dumps(match, ensure_ascii=False)) > EVENT_DATA_MAX_CHARS:
        raise StepCodeFailed(
            ProcessCode.WAIT_MATCH_INVALID,
            f"waitFor.match is larger than any event's data ({EVENT_DATA_MAX_CHARS} characters)",
        )
    return match


def wait_step_start(
    scope: StepScope, planned: PlannedStep, ctx: dict, runtime: ModuleRuntime
) -> StepResult:
    """Make the step's wait (``when`` already passed); answers a ``StepResult`` that waits."""
    wait_for = planned.definition["waitFor"]

    def described() -> dict[str, Any]:
        return {
            "match": _match(runtime, planned, ctx),
            "event_name": wait_for["event"],
            "after": scope.run.created_at,
            "expires_at": timezone.now() + duration_parse(wait_for["timeout"]),
        }

    wait = step_wait_open(scope, planned, EventWait, field="waitFor.match", describe=described)
    return (
        wait if isinstance(wait, StepResult) else StepResult(StepStatus.WAIT_INPUT, event_wait=wait)
    )


def wait_time_out(wait: EventWait) -> EventWait:
    """End a wait whose timeout came: one conditional UPDATE, so an event that claimed it just
    before keeps it. Answers the wait as it now is."""
    EventWait.objects.filter(
        pk=wait.pk, state=WaitState.WAITING, expires_at__lte=timezone.now()
    ).update(state=WaitState.TIMED_OUT, decided_at=timezone.now())
    wait.refresh_from_db()
    return wait


def wait_step_resume(scope: StepScope, planned: PlannedStep, wait: EventWait) -> StepResult:
    """The step's wait exists: wait on, or write the step's ledger row from what came."""
    if wait.state == WaitState.WAITING and wait.expires_at <= timezone.now():
        wait = wait_time_out(wait)
    if wait.state == WaitState.WAITING:
        return StepResult(StepStatus.WAIT_INPUT, event_wait=wait)
    if wait.state == WaitState.CLOSED:  # its run ended under it: nothing more to wait for
        refusal = Refused(
            ProcessCode.WAIT_CLOSED, None, f"the wait for {wait.event_name!r} was closed"
        )
        with transaction.atomic():
            row = record_step(scope, planned, disposition=Disposition.FAILED, refusal=refusal)
        return StepResult(StepStatus.FAILED, row)
    received = wait.event if wait.state == WaitState.RECEIVED else None
    answer = {"event": event_out(received) if received is not None else None}
    with transaction.atomic():
        row = record_step(scope, planned, disposition=Disposition.CONFIRMED, answer=answer)
    return StepResult(StepStatus.DONE, row)
