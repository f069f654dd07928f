"""Selectors behind the processes reads: the queue, the process list, one process's runs (keyset
pages), a run with its ledger.

Every read is scoped exactly as the single-run read is (``processes.steering.runs_visible``): a
person sees their own runs, an administrator every run. The processes themselves are everyone's.
``GET /v1/processes`` and ``turbobase processes list`` read ``processes_list``; the admin Processes
screen reads its rows with ``processes.process_rows``; both take the last runs from
``runs_newest_by_process``.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.models import User
from django.db.models import F, Q, QuerySet
from django.http import QueryDict

from extensions.models import ExtensionKind, ExtensionModule, ExtensionStatus
from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from kernel.filters import FilterInvalid, filter_apply
from processes.api.filters import STATE, ProcessRunsFilter, RunFilter
from processes.models import (
    Disposition,
    Process,
    ProcessRun,
    ProcessRunStep,
    RunState,
)
from processes.run_rows import QueueRun, RunSummarized
from processes.run_tally import runs_counted, tally_counts
from processes.steering import runs_visible
from processes.triggers.shape import trigger_of, trigger_shown

QUEUE_OWN_PARAMETERS = ("mode",)  # read by the view itself (the seed's lane filter)
CREATED_BOUNDS = ("createdAfter", "createdBefore")
LAST_RUNS = 5
# Newest first; the run id breaks a tie of created_at, so an order (and a keyset page) is total.
NEWEST = (F("created_at").desc(), F("pk").desc())

# How a process fires. Every process can be invoked by hand; issue 5's schedules register a
# provider here that answers ``{kind: 'schedule', cron, timezone}`` for a scheduled one. A batch
# provider answers for a whole list of processes in one go (the process list reads it once for every
# process); a single provider is asked per process, so it costs the list a query per process.
TriggerProvider = Callable[[str], "dict[str, Any] | None"]
TriggersProvider = Callable[[Sequence[str]], Mapping[str, dict[str, Any]]]
_trigger_providers: list[TriggerProvider] = []
_triggers_providers: list[TriggersProvider] = []


def trigger_provider_register(provider: TriggerProvider) -> None:
    """Add a provider; the first that answers a non-None trigger for a process id wins."""
    if provider not in _trigger_providers:
        _trigger_providers.append(provider)


def triggers_provider_register(provider: TriggersProvider) -> None:
    """Add a batch provider (ids → {id: trigger}, leaving out the ids it has nothing for).

    Batch providers are asked before single ones; the first answer for an id wins."""
    if provider not in _triggers_providers:
        _triggers_providers.append(provider)


def process_triggers(process_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Each process's trigger: a batch provider's, else a single provider's, else manual."""
    triggers: dict[str, dict[str, Any]] = {}
    for batch in _triggers_providers:
        missing = [process_id for process_id in process_ids if process_id not in triggers]
        if not missing:
            break
        for process_id, trigger in batch(missing).items():
            triggers.setdefault(process_id, trigger)
    for process_id in process_ids:
        if process_id in triggers:
            continue
        for provider in _trigger_providers:
            answer = provider(process_id)
            if answer is not None:
                triggers[process_id] = answer
                break
        else:
            triggers[process_id] = {"kind": "manual"}
    return triggers


def process_trigger(process_id: str) -> dict[str, Any]:
    return process_triggers([process_id])[process_id]


def runs_newest_by_process(
    runs: QuerySet[ProcessRun], process_ids: Iterable[str], *, per_process: int = LAST_RUNS
) -> dict[str, list[ProcessRun]]:
    """Each process's newest ``per_process`` runs of ``runs`` (newest first), in one query.

    One ``LIMIT`` subquery per process, glued with ``UNION ALL``: each walks the
    ``(process_id, created_at)`` index backwards and stops after ``per_process`` rows, so the
    read costs the same however long the processes' history (a window over every run of the
    processes, ``ROW_NUMBER() OVER (PARTITION BY process_id)``, read all of it)."""
    ids = list(dict.fromkeys(process_ids))
    by_process: dict[str, list[ProcessRun]] = {process_id: [] for process_id in ids}
    if not ids:
        return by_process
    parts = [
        ProcessRun.objects.filter(
            pk__in=runs.filter(process_id=process_id).order_by(*NEWEST).values("pk")[:per_process]
        ).values("pk")
        for process_id in ids
    ]
    newest = parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0]
    for run in runs.filter(pk__in=newest).order_by("process_id", *NEWEST):
        by_process[run.process_id].append(run)
    return by_process


@dataclass(frozen=True)
class QueueRead:
    runs: list[QueueRun]
    failures: dict[Any, dict[str, Any]]
    counts: dict[str, int]
    is_truncated: bool


def run_failures(runs: Sequence[RunSummarized]) -> dict[Any, dict[str, Any]]:
    """For each failed or rolled-back run, the ledger row that ended it (or, lacking one, the
    reason); for each refused run, the check that refused it.

    That is the row the engine named when it ended the run (``failed_sequence``) — an earlier
    delete refused under ``onRefused: 'continue'`` is on the ledger but did not end anything.
    A run ended before the engine kept that number falls back to its last failed row."""
    ended_badly = [run for run in runs if run.state in (RunState.FAILED, RunState.ROLLED_BACK)]
    ending = {run.pk: run.failed_sequence for run in ended_badly}
    rows = (
        ProcessRunStep.objects.filter(run_id__in=list(ending), refusal_code__isnull=False)
        .order_by("run_id", "-sequence")
        .values("run_id", "sequence", "disposition", "step_id", "refusal_code", "refusal_message")
    )
    failures: dict[Any, dict[str, Any]] = {}
    for row in rows:
        named = ending[row["run_id"]]
        if row["sequence"] == named or (named is None and row["disposition"] == Disposition.FAILED):
            failures.setdefault(
                row["run_id"],
                {
                    "stepId": row["step_id"],
                    "code": row["refusal_code"],
                    "message": row["refusal_message"],
                },
            )
    for run in ended_badly:
        # A run that failed before any step (a forEach over its cap, an engine fault) says why.
        if run.pk not in failures and run.state == RunState.FAILED:
            failures[run.pk] = {"stepId": None, "code": None, "message": run.reason}
    for run in runs:
        # A refused run never reached a step: its check is the failure. A run cancelled by the
        # instance (``run_timeout``) says why with the same code.
        if run.state == RunState.REFUSED or (run.state == RunState.CANCELLED and run.refusal_code):
            failures[run.pk] = {"stepId": None, "code": run.refusal_code, "message": run.reason}
    return failures


def queue_max_runs() -> int:
    return setting_get(SettingKey.PROCESSES_QUEUE_MAX_RUNS)


def queue_read(
    *, user: User, mode: str | None = None, params: QueryDict | None = None
) -> QueueRead:
    """The newest runs (at most ``processes.queue_max_runs``, 500) and counts over every visible run.

    The counts of the whole history come from the run tally (``processes.run_tally``), so they
    cost the same at any number of runs; with ``createdAfter`` / ``createdBefore`` they count the
    window's runs through the created_at index.

    ``params`` are the queue's filters (``processes.api.filters.RunFilter``). ``state`` narrows
    the list but not the counts: they stay the whole picture of the process and time window asked
    for, every bucket reported, so "none cancelled" still reads differently from "not asked".
    """
    visible = runs_visible(user)
    if mode:
        visible = visible.filter(mode=mode)
    params = params if params is not None else QueryDict()
    listed = filter_apply(
        RunFilter, params=params, queryset=visible, also_known=QUEUE_OWN_PARAMETERS
    )
    counts = {state: 0 for state in RunState.values}
    if any(params.get(bound) for bound in CREATED_BOUNDS):
        # A time window: count its runs, walking the created_at index over the window asked for.
        everything_but_state = params.copy()
        everything_but_state.pop(STATE, None)
        window = filter_apply(
            RunFilter,
            params=everything_but_state,
            queryset=visible,
            also_known=QUEUE_OWN_PARAMETERS,
        )
        counts.update(runs_counted(window))
    else:
        # The whole history: the tally (processes.run_tally), never the runs themselves.
        counts.update(
            tally_counts(
                process_id=params.get("processId") or None,
                mode=mode,
                invoked_by_id=None if user.is_staff else user.pk,
            )
        )
    # Walks the (created_at, run_id) index backwards (or (mode, created_at), (process_id, …),
    # (invoked_by, …) when narrowed): the newest runs cost the same at any history. Plain rows of
    # the columns the answer reads: the list grows to 500 runs, and a model instance each (all
    # columns read and decoded) cost several times the rest of the read.
    runs = [
        QueueRun._make(row)
        for row in listed.order_by(*NEWEST).values_list(*QueueRun._fields)[: queue_max_runs()]
    ]
    states = params.getlist(STATE) or RunState.values
    return QueueRead(
        runs=runs,
        failures=run_failures(runs),
        counts=counts,
        is_truncated=sum(counts[state] for state in states) > len(runs),
    )


# One process's runs, a page at a time: ``limit`` per page (default RUNS_PAGE), ``cursor`` from the
# previous page's ``next``.
RUNS_PAGE = 200
RUNS_PAGE_MAX = 500
RUNS_PAGE_OWN_PARAMETERS = ("limit", "cursor")


@dataclass(frozen=True)
class RunsPage:
    runs: list[ProcessRun]
    failures: dict[Any, dict[str, Any]]
    next: str | None  # the cursor of the page after this one; None on the last page


def run_cursor(run: ProcessRun) -> str:
    """Where a page ended: the last run's (created_at, run_id), opaque to the caller."""
    raw = f"{run.created_at.isoformat()}|{run.pk}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def cursor_parse(cursor: str) -> tuple[datetime, uuid.UUID]:
    """A cursor this list gave back as (created_at, run_id), or ``FilterInvalid`` naming it."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        at, run_id = raw.split("|")
        created_at = datetime.fromisoformat(at)
        if created_at.tzinfo is None:
            raise ValueError("a cursor's time carries its offset")
        return created_at.astimezone(UTC), uuid.UUID(run_id)
    except (ValueError, OverflowError) as exc:
        raise FilterInvalid(
            "cursor: not a cursor this list gave (pass the previous page's next)", field="cursor"
        ) from exc


def page_limit(raw: str | None) -> int:
    if raw is None:
        return RUNS_PAGE
    if not raw.isdigit() or not 1 <= int(raw) <= RUNS_PAGE_MAX:
        raise FilterInvalid(f"limit: a whole number from 1 to {RUNS_PAGE_MAX}", field="limit")
    return int(raw)


def process_runs_page(*, user: User, process_id: str, params: QueryDict) -> RunsPage:
    """One process's runs you can see, newest first, one keyset page (``limit``, ``cursor``)."""
    runs = filter_apply(
        ProcessRunsFilter,
        params=params,
        queryset=runs_visible(user).filter(process_id=process_id),
        also_known=RUNS_PAGE_OWN_PARAMETERS,
    )
    return runs_paged(runs, params)


def runs_paged(runs: QuerySet[ProcessRun], params: QueryDict) -> RunsPage:
    """``runs`` newest first, the keyset page ``params`` asks for (``limit``, ``cursor``).

    A page starts strictly after the cursor's (created_at, run_id) in that order, so walking
    ``next`` lists every run exactly once even while new runs arrive, and page N costs what page 1
    does (an index on created_at, no OFFSET)."""
    limit = page_limit(params.get("limit"))
    cursor = params.get("cursor")
    if cursor is not None:
        at, run_id = cursor_parse(cursor)
        # created_at <= at bounds the index range; the OR takes the tie at `at` by run id.
        runs = runs.filter(created_at__lte=at).filter(
            Q(created_at__lt=at) | Q(created_at=at, pk__lt=run_id)
        )
    found = list(runs.defer("input").order_by(*NEWEST)[: limit + 1])
    page = found[:limit]
    return RunsPage(
        runs=page,
        failures=run_failures(page),
        next=run_cursor(page[-1]) if len(found) > limit else None,
    )


@dataclass(frozen=True)
class ProcessListing:
    """One deployed process as the list shows it."""

    id: str
    description: str
    trigger: dict[str, Any]  # its own trigger if it declares one, else its schedule, else manual
    is_enabled: bool
    disabled_reason: str | None
    is_migration: bool
    version: int
    last_runs: list[ProcessRun] = field(default_factory=list)
    failures: dict[Any, dict[str, Any]] = field(default_factory=dict)
    # Every way it fires besides by hand: its own trigger and its schedule ([manual] when none).
    triggers: list[dict[str, Any]] = field(default_factory=list)


def listed_triggers(
    declared: dict[str, Any] | None, provided: dict[str, Any]
) -> list[dict[str, Any]]:
    """The process's own trigger first, then the providers' (its schedule); manual when neither."""
    every = [declared] if declared is not None else []
    if provided.get("kind") != "manual":
        every.append(provided)
    return every or [provided]


def process_switch(process: Process | None, *, is_instance_on: bool) -> tuple[bool, str | None]:
    """Whether the process may start now and, when not, which switch says no."""
    if not is_instance_on:
        return False, "every process on the instance is switched off (processes.enabled)"
    if process is not None and not process.is_enabled:
        return False, process.disabled_reason or "an administrator switched this process off"
    return True, None


def processes_list(*, user: User) -> list[ProcessListing]:
    """Every deployed process with its trigger, its switch and the caller's last five runs.

    A fixed number of queries however many processes: the modules, the switches, the instance
    setting, the triggers (batch providers), the last runs of all (``runs_newest_by_process``)
    and their failures."""
    modules = list(
        ExtensionModule.objects.filter(
            kind=ExtensionKind.PROCESS, status=ExtensionStatus.ACTIVE
        ).order_by("id")
    )
    ids = [module.id for module in modules]
    switches = {p.id: p for p in Process.objects.filter(pk__in=ids)}
    is_instance_on = bool(setting_get(SettingKey.PROCESSES_ENABLED))
    triggers = process_triggers(ids)
    last_runs = runs_newest_by_process(runs_visible(user).defer("input"), ids)
    failures = run_failures([run for runs in last_runs.values() for run in runs])
    listings: list[ProcessListing] = []
    for module in modules:
        process = switches.get(module.id)
        is_enabled, reason = process_switch(process, is_instance_on=is_instance_on)
        definition = module.definition if isinstance(module.definition, dict) else {}
        runs = last_runs[module.id]
        own = trigger_of(module.id, definition)
        declared = trigger_shown(own) if own is not None else None
        every = listed_triggers(declared, triggers[module.id])
        listings.append(
            ProcessListing(
                id=module.id,
                description=(process.description if process else "")
                or definition.get("description")
                or "",
                trigger=every[0],
                triggers=every,
                is_enabled=is_enabled,
                disabled_reason=reason,
                is_migration=process.is_migration
                if process
                else definition.get("eachRow") is not None,
                version=module.version,
                last_runs=runs,
                failures={run.pk: failures[run.pk] for run in runs if run.pk in failures},
            )
        )
    return listings


def run_ledger(run: ProcessRun) -> list[ProcessRunStep]:
    return list(run.ledger.order_by("sequence", "pk"))
