"""Bulk steering: preview, submit, approve or reject, perform.

A preview counts the runs the filter names that the verb applies to now (cancel: every run not
ended; retry: failed, cancelled, rolled back or refused; resume: committed with work left) and fixes
their ids on a ``BulkAction``; nothing changes. Submitting it performs exactly those runs — in a
worker, a batch at a time, its progress on the row — or, over ``steer.approval_over`` runs, waits
for a different administrator's approval (the requester's own is ``four_eyes``). Each run is
steered by the ordinary verb (``processes.steering``) as the requester, so a run that finished or
moved since is skipped with its state, never forced. One audit event tells the whole action.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.http import QueryDict
from django.utils import timezone
from django_q.conf import Conf
from django_q.tasks import async_task

from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from kernel.audit import audit_record
from kernel.errors import AdminRequired, TurbobaseError
from kernel.filters import FilterInvalid
from kernel.ids import uuid_or_none
from processes.audit import ProcessAuditAction
from processes.bulk.models import BulkAction, BulkOutcome, BulkState, BulkVerb
from processes.errors import BulkInvalid, BulkNotFound, BulkUsed, FourEyes, RunNotFound
from processes.models import TERMINAL_STATES, ProcessRun, RunState
from processes.run_search.find import INPUT_PREFIX, runs_filtered
from processes.steering import RETRYABLE, run_cancel, run_resume, run_retry

FILTER_KEYS = ("processId", "state", "pendingReason", "createdBefore", "createdAfter")
REPEATABLE = frozenset({"state", "pendingReason"})
SAMPLE = 10
BATCH = 50
SKIPS_KEPT = 100
PERFORM_TASK = "processes.bulk.service.bulk_perform"


def _applicable(action: str) -> dict[str, Any]:
    """The runs the verb applies to, as a filter (the preview counts only these)."""
    if action == BulkVerb.CANCEL:
        return {"state__in": [s for s in RunState.values if s not in TERMINAL_STATES]}
    if action == BulkVerb.RETRY:
        return {"state__in": sorted(RETRYABLE)}
    return {"state": RunState.COMMITTED, "outstanding__gt": 0}


def _params(raw: Any) -> QueryDict:
    """The body's ``filter`` as the query string the run search reads, or 400 naming the key."""
    if not isinstance(raw, dict):
        raise BulkInvalid("filter must be an object of the run filters", field="filter")
    params = QueryDict(mutable=True)
    for key, value in raw.items():
        where = f"filter.{key}"
        if key not in FILTER_KEYS and not (isinstance(key, str) and key.startswith(INPUT_PREFIX)):
            known = ", ".join((*FILTER_KEYS, "input.<field>"))
            raise BulkInvalid(f"{where} is not a run filter ({known})", field=where)
        values = value if isinstance(value, list) and key in REPEATABLE else [value]
        if not values or not all(isinstance(v, str) and v for v in values):
            kind = "a string or a list of strings" if key in REPEATABLE else "a string"
            raise BulkInvalid(f"{where} must be {kind}", field=where)
        params.setlist(key, values)
    return params


def bulk_preview(*, user: User, action: Any, filter: Any) -> tuple[BulkAction, list[ProcessRun]]:
    """Count and fix the runs; answer the action and a sample of them (newest first)."""
    if action not in BulkVerb.values:
        raise BulkInvalid(f"action must be one of {', '.join(BulkVerb.values)}", field="action")
    try:
        runs = runs_filtered(user=user, params=_params(filter), also_known=())
    except FilterInvalid as exc:
        field = f"filter.{exc.field}" if exc.field else "filter"
        raise BulkInvalid(f"filter.{exc.message}", field=field) from exc
    runs = runs.filter(**_applicable(action)).order_by("-created_at", "-pk")
    most = setting_get(SettingKey.STEER_BULK_MAX_RUNS)
    ids = [str(pk) for pk in runs.values_list("pk", flat=True)[: most + 1]]
    if len(ids) > most:
        raise BulkInvalid(
            f"the filter names more than {most} runs (steer.bulk_max_runs): narrow it",
            field="filter",
        )
    bulk = BulkAction.objects.create(
        action=action, filter=filter, run_ids=ids, count=len(ids), requested_by=user
    )
    return bulk, list(runs[:SAMPLE])


def bulk_get(*, user: User, bulk_id: str) -> BulkAction:
    """The requester's bulk action (an administrator: any), or 404."""
    parsed = _uuid(bulk_id)
    found = BulkAction.objects.filter(pk=parsed).first() if parsed else None
    if found is None or not (user.is_staff or found.requested_by_id == user.pk):
        raise BulkNotFound(f"no bulk action {bulk_id!r} that is yours", bulkId=str(bulk_id))
    return found


def _uuid(raw: Any) -> str | None:
    parsed = uuid_or_none(str(raw))
    return str(parsed) if parsed is not None else None


def _locked(bulk_id: Any) -> BulkAction | None:
    """The bulk action of that id, its row locked till the transaction ends; None if none."""
    parsed = _uuid(bulk_id)
    return BulkAction.objects.select_for_update().filter(pk=parsed).first() if parsed else None


@transaction.atomic
def bulk_submit(*, user: User, bulk_id: Any, action: Any, filter: Any) -> BulkAction:
    """Perform the previewed action — or, over the threshold, wait for another administrator."""
    if not isinstance(bulk_id, str) or not bulk_id:
        raise BulkInvalid("preview first: bulkId names the preview to perform", field="bulkId")
    bulk = _locked(bulk_id)
    if bulk is None or bulk.requested_by_id != user.pk:
        raise BulkNotFound(f"no bulk action {bulk_id!r} that is yours", bulkId=bulk_id)
    if bulk.status != BulkState.PREVIEWED:
        raise BulkUsed(f"bulk action {bulk_id} is {bulk.status}", bulkId=bulk_id, state=bulk.status)
    if (action, filter) != (bulk.action, bulk.filter):
        raise BulkInvalid(
            "action and filter must be the preview's (preview again to change them)",
            field="filter" if action == bulk.action else "action",
        )
    if bulk.count > setting_get(SettingKey.STEER_APPROVAL_OVER):
        bulk.status = BulkState.AWAITING_APPROVAL
        bulk.save(update_fields=["status"])
        return bulk
    _start(bulk)
    return bulk


@transaction.atomic
def bulk_decide(*, user: User, bulk_id: str, approve: bool, reason: Any = "") -> BulkAction:
    """Approve (it starts) or reject (it never does) an action awaiting approval."""
    if not user.is_staff:
        raise AdminRequired("only an administrator approves or rejects a bulk action")
    bulk = _locked(bulk_id)
    if bulk is None:
        raise BulkNotFound(f"no bulk action {bulk_id!r}", bulkId=str(bulk_id))
    if bulk.requested_by_id == user.pk:
        raise FourEyes("another administrator must approve or reject your own bulk action")
    if bulk.status != BulkState.AWAITING_APPROVAL:
        raise BulkUsed(f"bulk action {bulk_id} is {bulk.status}", bulkId=bulk_id, state=bulk.status)
    bulk.approved_by, bulk.decided_at = user, timezone.now()
    if approve:
        _start(bulk)
        return bulk
    if not isinstance(reason, str) or not reason.strip():
        raise BulkInvalid("say why it is rejected", field="reason")
    bulk.status, bulk.reason = BulkState.REJECTED, reason.strip()
    bulk.save(update_fields=["status", "reason", "approved_by", "decided_at"])
    _audit(bulk, ProcessAuditAction.RUNS_BULK_REJECTED, actor=user)
    return bulk


def _start(bulk: BulkAction) -> None:
    bulk.status = BulkState.RUNNING
    bulk.save(update_fields=["status", "approved_by", "decided_at"])
    bulk_id = str(bulk.pk)
    transaction.on_commit(
        lambda: async_task(
            PERFORM_TASK, bulk_id, cluster=Conf.PREFIX, task_name=f"bulk {bulk_id}", save=False
        )
    )


def bulk_perform(bulk_id: str) -> None:
    """The worker's task: steer every run of the action, a batch at a time."""
    while bulk_advance(bulk_id):
        pass


_VERBS: dict[str, Callable[..., ProcessRun]] = {
    BulkVerb.CANCEL: run_cancel,
    BulkVerb.RETRY: run_retry,
    BulkVerb.RESUME: run_resume,
}


@transaction.atomic
def bulk_advance(bulk_id: str, *, batch: int = BATCH) -> bool:
    """Steer the next ``batch`` runs and record how far it got; answers whether any are left.

    The action's row is locked meanwhile, so two workers handed the same task never steer a
    run twice: the second finds the position moved on."""
    bulk = BulkAction.objects.select_for_update().filter(pk=bulk_id).first()
    if bulk is None or bulk.status != BulkState.RUNNING:
        return False
    requester = bulk.requested_by
    for run_id in bulk.run_ids[bulk.position : bulk.position + batch]:
        outcome, why = _steer(bulk.action, requester, run_id)
        counter = f"runs_{outcome}"
        setattr(bulk, counter, getattr(bulk, counter) + 1)
        if outcome != BulkOutcome.DONE and len(bulk.skips) < SKIPS_KEPT:
            bulk.skips.append({"runId": run_id, "outcome": outcome, "why": why})
        bulk.position += 1
    if bulk.position >= bulk.count:
        bulk.status, bulk.finished_at = BulkState.DONE, timezone.now()
        _audit(bulk, ProcessAuditAction.RUNS_BULK, actor=requester)
    bulk.save()
    return bulk.status == BulkState.RUNNING


def _steer(action: str, requester: User | None, run_id: str) -> tuple[BulkOutcome, str]:
    """What became of one run, and why."""
    if requester is None:
        return BulkOutcome.FAILED, "the requester's account was deleted"
    before = ProcessRun.objects.filter(pk=run_id).values_list("state", flat=True).first()
    if before is None:
        return BulkOutcome.SKIPPED, "the run is gone"
    try:
        with transaction.atomic():
            _VERBS[action](user=requester, run_id=run_id)
    except RunNotFound:
        return BulkOutcome.SKIPPED, "the run is no longer yours to steer"
    except TurbobaseError as exc:
        refused_by_state = getattr(exc, "http_status", 0) == 409
        kind = BulkOutcome.SKIPPED if refused_by_state else BulkOutcome.FAILED
        return kind, f"{before}: {exc.message}"
    if action == BulkVerb.CANCEL and before in TERMINAL_STATES:
        return (
            BulkOutcome.SKIPPED,
            f"it had ended {before}",
        )  # cancelling an ended run changes nothing
    return BulkOutcome.DONE, ""


def _audit(bulk: BulkAction, action: str, *, actor: Any) -> None:
    audit_record(
        actor=actor,
        action=action,
        target=f"bulk:{bulk.pk}",
        after=_told(bulk),
        reason=bulk.reason,
    )


def _told(bulk: BulkAction) -> dict[str, Any]:
    """What, how many, with what outcome, and who: the audit event's and the answer's core."""
    return {
        "action": bulk.action,
        "filter": bulk.filter,
        "count": bulk.count,
        "done": bulk.runs_done,
        "skipped": bulk.runs_skipped,
        "failed": bulk.runs_failed,
        "requestedBy": bulk.requested_by.get_username() if bulk.requested_by else None,
        "approvedBy": bulk.approved_by.get_username() if bulk.approved_by else None,
    }


def bulk_shown(bulk: BulkAction) -> dict[str, Any]:
    """A bulk action as the API answers it: what, how many, who, and how far it got."""
    return {
        "bulkId": str(bulk.pk),
        "state": bulk.status,
        **_told(bulk),
        "skips": bulk.skips,
        "reason": bulk.reason or None,
    }
