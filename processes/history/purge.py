"""``history_purge``: the one door that purges finished runs (the hourly job, the CLI, the API).

It walks the runs the thresholds take (``selection``), oldest first, a page at a time, and purges
each page in its own short transaction (``batch``): no lock is held from one batch to the next,
so workers and the queue read go on meanwhile. One purge at a time (``lease``): a second answers
409 and does nothing. With an archive directory, it is checked before anything is deleted and
each batch is archived before it is deleted. Each purge (not a dry run) writes one audit event.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from kernel.audit import audit_purge, audit_record
from processes.audit import ProcessAuditAction
from processes.history.archive import archive_check, archive_dir, archive_path
from processes.history.batch import BatchCounts, batch_count, batch_purge
from processes.history.errors import ArchiveUnwritable, PurgeRunning
from processes.history.lease import lease_free, lease_renew, lease_take
from processes.history.selection import PurgeRule, page_after, purge_rule, runs_held_back
from records.trail import trail_purge

# Runs per transaction: a batch of 500 runs with 5 ledger rows each holds its locks for tens of
# milliseconds (see bench/history_purge.py for the longest one measured).
BATCH_RUNS = 500


@dataclass
class PurgeResult:
    runs: int = 0
    ledger_rows: int = 0
    events: int = 0
    tasks: int = 0
    trail_rows: int = 0  # trail.retain_days
    audit_events: int = 0  # audit.retain_days
    archived: str | None = None
    batches: int = 0
    longest_batch_s: float = 0.0  # the longest one transaction held its locks
    batch_seconds: list[float] = field(default_factory=list)  # each batch's transaction
    finished: bool = True  # False: stopped at its time budget; the next purge goes on
    stopped: ArchiveUnwritable | None = None  # the archive failed after the first batch

    def add(self, counts: BatchCounts) -> None:
        self.runs += counts.runs
        self.ledger_rows += counts.ledger_rows
        self.events += counts.events
        self.tasks += counts.tasks

    def answer(self) -> dict[str, Any]:
        """``POST /v1/history/purge``'s body."""
        return {
            "runs": self.runs,
            "ledgerRows": self.ledger_rows,
            "events": self.events,
            "tasks": self.tasks,
            "trailRows": self.trail_rows,
            "auditEvents": self.audit_events,
            "archived": self.archived,
        }


def history_purge(
    *,
    by: Any = None,
    dry_run: bool = False,
    finished_before: datetime | None = None,
    batch_runs: int = BATCH_RUNS,
    max_seconds: float | None = None,
) -> PurgeResult:
    """Purge (or, ``dry_run``, count) the finished runs past the thresholds, or finished before
    ``finished_before``. ``max_seconds`` bounds the background job: it stops between batches."""
    rule = purge_rule(finished_before=finished_before)
    if dry_run:
        result = _walk(rule, batch_runs=batch_runs, archive=None, owner=None, max_seconds=None)
        _kept_rows_purge(result, dry_run=True)
        return result
    directory = archive_dir()
    if directory is not None:
        archive_check(directory)  # before anything is deleted
    owner = uuid.uuid4().hex
    if not lease_take(owner):
        raise PurgeRunning("another purge is running; this one did nothing — try again after it")
    archive = archive_path(directory, timezone.now()) if directory is not None else None
    try:
        result = _walk(
            rule, batch_runs=batch_runs, archive=archive, owner=owner, max_seconds=max_seconds
        )
        if result.stopped is None:
            _kept_rows_purge(result, dry_run=False)
    finally:
        lease_free(owner)
    stopped = result.stopped
    _audit(by, result, rule, stopped=stopped.message if stopped else "")
    if stopped is not None:
        # What was archived and deleted before the archive failed is said, and kept in the audit.
        stopped.extra["purged"] = result.answer()
        raise stopped
    return result


def _kept_rows_purge(result: PurgeResult, *, dry_run: bool) -> None:
    """The write trail and the audit log past their own retention, when an operator set one
    (``trail.retain_days``, ``audit.retain_days``; 0, the default, keeps every row)."""
    now = timezone.now()
    trail_days, audit_days = (
        setting_get(SettingKey.TRAIL_RETAIN_DAYS),
        setting_get(SettingKey.AUDIT_RETAIN_DAYS),
    )
    if trail_days:
        result.trail_rows = trail_purge(before=now - timedelta(days=trail_days), dry_run=dry_run)
    if audit_days:
        result.audit_events = audit_purge(before=now - timedelta(days=audit_days), dry_run=dry_run)


def _walk(
    rule: PurgeRule,
    *,
    batch_runs: int,
    archive: Path | None,
    owner: str | None,
    max_seconds: float | None,
) -> PurgeResult:
    result = PurgeResult()
    started = time.monotonic()
    after = None
    while page := page_after(rule, after, batch_runs):
        after = page[-1]
        run_ids = [run_id for _, run_id in page]
        if owner is None:
            held = runs_held_back(run_ids)
            result.add(batch_count([run_id for run_id in run_ids if run_id not in held]))
            continue
        began = time.monotonic()
        try:
            counts = batch_purge(run_ids, archive=archive)
        except ArchiveUnwritable as exc:
            result.stopped = exc  # this batch is untouched (rolled back); earlier ones are archived
            break
        result.batch_seconds.append(time.monotonic() - began)
        result.longest_batch_s = max(result.longest_batch_s, result.batch_seconds[-1])
        result.batches += 1
        result.add(counts)
        if archive is not None and counts.runs:
            result.archived = str(archive)
        if not lease_renew(owner):
            raise PurgeRunning("this purge's lease ran out and another purge took it; it stopped")
        if max_seconds is not None and time.monotonic() - started > max_seconds:
            result.finished = False
            break
    return result


def _audit(by: Any, result: PurgeResult, rule: PurgeRule, *, stopped: str) -> None:
    with transaction.atomic():
        audit_record(
            actor=by,
            action=ProcessAuditAction.HISTORY_PURGED,
            target="history",
            after={**result.answer(), "rule": rule.described, "finished": result.finished},
            reason=stopped,
        )


def history_purge_scheduled(max_seconds: float = 600) -> int:
    """The hourly job: purge for at most ``max_seconds`` (the next hour goes on); a purge already
    running (the CLI's, the API's) is left to finish. Answers the runs purged."""
    try:
        return history_purge(max_seconds=max_seconds).runs
    except PurgeRunning:
        return 0
