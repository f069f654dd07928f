"""Plan a run before it writes: ``POST /v1/processes/<id>/plan``.

The plan is the real run — the same checks as an invoke, the real engine, sandbox, boundary,
hooks, guardrails and row-level security, ``ctx.query`` reading what earlier steps wrote — made
inside one database transaction that is always rolled back. So nothing it did is kept: no run
row, record, trail row, ledger row, held delete, outbound write, event, task or audit row, and
nothing is sent (every send leaves after a commit, which never comes). The answer is read from
what the run wrote just before the rollback.

What cannot be known before writing is listed in ``unknowns``, never guessed: a source's verdict
and the id it mints, an event not yet sent, a person's answer to a task, a sleep, an AI
provider's answer (never asked while planning). An awaitSource step does not stop the plan: the
steps after it are planned, and a record built with the id the source would mint shows
``{"$unknown": "<stepId>.externalId"}`` there (``processes.planning``). The other waits do stop
it: the steps from there on are unknown too, each naming the step it waits behind. A delete that
meets a full delete window is shown with ``"guardrail": {"decision": "window", …}``. A migration plans its first
``rows`` rows (default 20) and reports how many the engine still counted outstanding.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from guardrails.models import HeldDelete
from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get, settings_cache_clear, settings_overridden
from processes.catalog import process_module_get
from processes.codes import ProcessCode
from processes.engine.claim import run_claim
from processes.engine.plan import plan_build
from processes.engine.runner import ChainRunner
from processes.invoke import run_invoke
from processes.models import PendingReason, ProcessRun, ProcessRunStep
from processes.planning import (
    PlannedWindow,
    PlannedWrite,
    PlanSeen,
    PlanStops,
    placeholders_shown,
    planning,
)
from records.codes import RefusalCode

PLAN_ROWS = 20
PLAN_ROWS_MAX = 500
WRITES = ("create", "update", "delete")
# Why a parked run cannot be planned past the step it waits on.
WAITING = {
    PendingReason.AWAITING_SOURCE: "the source's verdict and the id it mints",
    PendingReason.AWAITING_TIME: "a sleep or a delete window: time that has not passed",
    PendingReason.AWAITING_ACTION: "a person's answer to a task",
    PendingReason.AWAITING_INPUT: "an event not yet sent",
    PendingReason.RETRYING: "a provider that failed and is asked again later",
}
# On a ledger row, but not a refusal: the write was made and waits (a held delete).
NOTICES = frozenset({RefusalCode.SOURCE_AWAITING_CONFIRMATION})
KNOWN_CODES = frozenset({*RefusalCode, *ProcessCode})
HOOK_CODES = frozenset(
    {RefusalCode.HOOK_REJECTED, RefusalCode.HOOK_FAILED, RefusalCode.HOOK_TIMEOUT}
)
GUARDRAIL_CODES: dict[str, str] = {
    RefusalCode.GUARDRAIL_DENIED: "refuse",
    RefusalCode.DELETE_CAP_EXCEEDED: "refuse",
}


class _Discard(Exception):
    """Carries the answer out of the transaction it rolls back."""

    def __init__(self, answer: dict[str, Any]) -> None:
        super().__init__("plan discarded")
        self.answer = answer


def run_plan(*, process_id: str, body: Any, user: User, rows: int = PLAN_ROWS) -> dict[str, Any]:
    """What a run of ``process_id`` with ``body`` would do now, writing nothing (see above).
    Refused as an invoke is (switches, input), with the same errors."""
    try:
        with (
            transaction.atomic(),
            planning() as (written, seen),
            settings_overridden({SettingKey.PROCESSES_SLICE_MAX_ROWS: rows}),
        ):
            raise _Discard(_planned(process_id, body, user, written, seen))
    except _Discard as discarded:
        return discarded.answer
    finally:
        settings_cache_clear()  # nothing read inside the rolled-back transaction is kept


def _planned(
    process_id: str, body: Any, user: User, written: list[PlannedWrite], seen: PlanSeen
) -> dict[str, Any]:
    module = process_module_get(process_id)
    run = run_invoke(process_id=process_id, body=body, user=user, module=module, send=False)
    claimed = run_claim(str(run.pk), run.delivery)
    assert claimed is not None  # written in this transaction: nobody else can hold it
    run, lease = claimed
    runner = ChainRunner(run, lease)
    stopped: tuple[str, str] | None = None
    try:
        runner.execute()
    except PlanStops as stop:
        stopped = ("", stop.why)  # at the first planned step the ledger has no row for
    finally:
        runner.close()
    run.refresh_from_db()
    ledger = list(run.ledger.order_by("sequence", "pk"))
    steps = _steps(run, ledger, written, seen)
    answer: dict[str, Any] = {
        "processId": process_id,
        "version": module.version,
        "steps": steps,
        "refusals": [
            {"stepId": row.step_id, **row.refusal}
            for row in ledger
            if row.refusal is not None and row.refusal_code not in NOTICES
        ],
        "unknowns": _source_unknowns(ledger, seen)
        + _unknowns(run, module.definition, ledger, stopped),
    }
    if module.definition.get("eachRow") is not None:
        answer["rowsOutstanding"] = run.outstanding
    return answer


def _steps(
    run: ProcessRun, ledger: list[ProcessRunStep], written: list[PlannedWrite], seen: PlanSeen
) -> list[dict[str, Any]]:
    """Each ledger row as a planned step, with what its write put in its record (the writes
    are matched to the rows by step and record, in order), then a delete that waits for a full
    delete window (it wrote no row)."""
    by_write: dict[tuple[str, Any], list[PlannedWrite]] = {}
    for write in written:
        by_write.setdefault((write.step, write.pg_row_id), []).append(write)
    held = set(
        HeldDelete.objects.filter(process_run_id=str(run.pk)).values_list("pg_row_id", flat=True)
    )
    windows = {window.step: window for window in seen.windows}
    steps = []
    for row in ledger:
        writes = by_write.get((row.step_id, row.pg_row_id))
        step = _step(row, writes.pop(0) if writes else None, row.pg_row_id in held, seen)
        window = windows.pop(row.step_id, None)
        if window is not None:  # the window would not free within the wait budget: not reached
            step["guardrail"] = _window(window)
        steps.append(step)
    for window in windows.values():
        steps.append(
            {
                "stepId": window.step,
                "kind": "delete",
                "recordType": window.record_type,
                "action": "wait",
                "record": None,
                "key": None,
                "guardrail": _window(window),
                "hook": None,
            }
        )
    return steps


def _window(window: PlannedWindow) -> dict[str, Any]:
    return {"rule": window.cap, "decision": "window", "message": window.message}


def _step(
    row: ProcessRunStep, write: PlannedWrite | None, is_held: bool, seen: PlanSeen
) -> dict[str, Any]:
    if row.awaiting_verdict:
        action = "wait"
    elif row.skip_reason:
        action = "skip"
    elif row.refusal_code in (None, *NOTICES) and row.action in WRITES:
        action = row.action
    else:
        action = "skip"
    shown = None
    if write is not None and action in ("create", "update", "wait"):
        shown = placeholders_shown(
            {"parent": write.fields, **({"lines": write.lines} if write.lines is not None else {})},
            seen,
        )
    return {
        "stepId": row.step_id,
        "kind": row.action,
        "recordType": row.record_type or None,
        "action": action,
        "record": shown,
        "key": row.row_key or None,
        "guardrail": _guardrail(row, is_held),
        "hook": _hook(row),
    }


def _guardrail(row: ProcessRunStep, is_held: bool) -> dict[str, Any] | None:
    rule = f"{row.record_type}.{row.action}"
    if is_held:
        message = "the delete would be held for an operator's approval"
        return {"rule": rule, "decision": "hold", "message": message}
    decision = GUARDRAIL_CODES.get(row.refusal_code or "")
    if decision is None:
        return None
    return {"rule": row.refusal_field or rule, "decision": decision, "message": row.refusal_message}


def _hook(row: ProcessRunStep) -> dict[str, Any] | None:
    """A hook's refusal: one of the hook codes, or a code of the hook's own (no refusal made
    while planning carries any other code the boundary or the engine does not know)."""
    code = row.refusal_code
    if code is None or (code not in HOOK_CODES and code in KNOWN_CODES):
        return None
    return {"decision": "refuse", "code": row.refusal_code, "message": row.refusal_message}


def _source_unknowns(ledger: list[ProcessRunStep], seen: PlanSeen) -> list[dict[str, str]]:
    """A verdict an awaitSource step waits for, and an id a later step's record uses."""
    unknowns = []
    for row in ledger:
        label = f"{row.step_id}.externalId"
        if row.awaiting_verdict:
            unknowns.append({"stepId": row.step_id, "why": WAITING[PendingReason.AWAITING_SOURCE]})
        elif label in seen.shown:
            unknowns.append({"stepId": row.step_id, "why": f"the id the source mints ({label})"})
    return unknowns


def _unknowns(
    run: ProcessRun,
    definition: dict[str, Any],
    ledger: list[ProcessRunStep],
    stopped: tuple[str, str] | None,
) -> list[dict[str, str]]:
    """The step the run waits on (or the plan stopped at) and every planned step after it."""
    if stopped is None and run.pending_reason not in WAITING:
        return []
    why = stopped[1] if stopped is not None else WAITING[PendingReason(run.pending_reason)]
    seen = {row.step_id for row in ledger if not row.awaiting_verdict}
    planned = [
        step.step_id
        for step in plan_build(
            definition, run.input, for_each_cap=setting_get(SettingKey.PROCESSES_FOR_EACH_MAX_ITEMS)
        )
        if step.step_id not in seen
    ]
    at = run.waiting_step if stopped is None and run.waiting_step else (planned or ["?"])[0]
    unknowns = [{"stepId": at, "why": why}]
    unknowns += [
        {"stepId": step_id, "why": f"after {at}, which waits for {why}"}
        for step_id in planned
        if step_id != at
    ]
    return unknowns
