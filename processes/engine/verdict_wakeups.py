"""A source's verdicts and the runs waiting on them: folded into their ledger rows in the
verdicts' own transaction, and the runs woken once it commits.

``records.verdicts`` tells ``verdicts_folded`` inside the transaction that applies a run of
verdicts (a drain's run, or one). ``on_verdicts_folded`` reads once which of them a step waits on
(``awaiting_verdict``; most writes have none — a migration's creates) and writes each such ledger
row's verdict (its ``externalId``, or its refusal) in the same transaction: a verdict and the
ledger row waiting on it commit together or not at all, and the resumed delivery reads the step
as done. After the commit the waiting runs are woken by one conditional UPDATE
(``wakeups.source_wake``). ``on_source_verdicts`` (after commit) hands deletes on to
``on_source_verdict`` (a rolled-back run's rollback delete).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from processes.engine.statuses import VerdictWait
from processes.engine.waits import ledger_verdict
from processes.engine.wakeups import on_source_verdict, source_wake
from processes.models import Disposition, ProcessRunStep
from records.models import WriteOperation
from records.verdicts import Announced, Folded

_COLUMNS = ("external_id", "disposition", "refusal_code", "refusal_field", "refusal_message")


def on_verdicts_folded(sender: Any = None, *, folded: Sequence[Folded], **kwargs: Any) -> None:
    """Connected to ``records.verdicts.verdicts_folded`` (inside the verdicts' transaction)."""
    by_state = {f.write_state_id: f for f in folded}
    waiting = list(
        # Not a row a rollback or a redrive has decided since: its disposition stands.
        ProcessRunStep.objects.filter(
            write_state_id__in=by_state, awaiting_verdict=True, disposition=Disposition.CONFIRMED
        )
        .order_by("id")
        .values_list("pk", "run_id", "write_state_id", "external_id")
    )
    if not waiting:
        return
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    params = []
    for pk, _run, write_state_id, external_id in waiting:
        assert write_state_id is not None  # the filter named it
        f = by_state[write_state_id]
        taken = ledger_verdict(
            status=f.status,
            external_id=f.external_id,
            write_external_id=f.write_external_id,
            code=f.code,
            field=f.field,
            message=f.message,
        )
        if taken.status == VerdictWait.CONFIRMED:
            values = [taken.external_id, Disposition.CONFIRMED, None, None, None]
        else:
            assert taken.refusal is not None
            refusal = taken.refusal
            kept = taken.external_id if taken.external_id is not None else external_id
            values = [kept, Disposition.FAILED, refusal.code, refusal.field, refusal.message]
        params.append([*values, now, pk])
    _ledger_fold(params)
    run_ids = list(dict.fromkeys(run_id for _pk, run_id, *_rest in waiting))
    transaction.on_commit(lambda: source_wake(run_ids))


def _ledger_fold(params: list[list[Any]]) -> None:
    """One statement text for every waiting row (``executemany``): no longer awaiting, its
    verdict's columns written. The read's conditions are asked again: a rollback that decided a
    row after the read (and whose lock this UPDATE waited for) keeps its decision."""
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(c)} = %s" for c in (*_COLUMNS, "updated_at"))
    sql = (
        f"UPDATE {quote(ProcessRunStep._meta.db_table)} SET {quote('awaiting_verdict')} = %s,"
        f" {assignments} WHERE {quote('id')} = %s AND {quote('awaiting_verdict')} = %s"
        f" AND {quote('disposition')} = %s"
    )
    with connection.cursor() as cursor:
        cursor.executemany(
            sql, [[False, *row, True, Disposition.CONFIRMED.value] for row in params]
        )


def on_source_verdicts(sender: Any = None, *, verdicts: Sequence[Announced], **kwargs: Any) -> None:
    """Connected to ``records.verdicts.source_verdicts`` (after commit)."""
    for v in verdicts:
        if v.operation == WriteOperation.DELETE:
            on_source_verdict(
                write_state_id=v.write_state_id, record_id=v.record_id, verdict=v.verdict
            )
