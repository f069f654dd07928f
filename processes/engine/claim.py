"""Claiming a run for one delivery: its lease taken, the run read with its invoker.

The claim is one conditional UPDATE: it takes the lease only while the run may be claimed (a
state a delivery may start from, no live lease, this delivery's number), and moves a queued run
to running, so a cancel can never be overwritten. On PostgreSQL the same statement answers the
run as the UPDATE left it and its invoker (``UPDATE … RETURNING``); elsewhere (SQLite) the ORM
reads them after. Then one read of the ledger (``ledger_position``) gives the counts a delivery
keeps in memory.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connections, router
from django.db.models import Model, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from kernel.ids import uuid_or_none
from processes.engine.lease import Lease, lease_seconds
from processes.engine.ledger import ledger_position
from processes.models import PendingReason, ProcessRun
from processes.status import MOVES, RunMove, states_from


def run_claim(run_id: str, delivery: int | None = None) -> tuple[ProcessRun, Lease] | None:
    """Take the run's lease if it is free (or expired). None when another delivery has it, the
    run ended, or ``delivery`` is stale (a later enqueue superseded it)."""
    pk = uuid_or_none(str(run_id))
    if pk is None:  # no run has it
        return None
    now, token = timezone.now(), uuid.uuid4().hex
    until = now + timedelta(seconds=lease_seconds())
    db = router.db_for_write(ProcessRun)
    if connections[db].vendor == "postgresql":
        run = _claimed_returning(db, pk, delivery, now=now, until=until, token=token)
        if run is None:
            return None
    else:
        free = ProcessRun.objects.filter(pk=pk, state__in=states_from(RunMove.CLAIM)).filter(
            Q(lease_until__isnull=True) | Q(lease_until__lt=now)
        )
        if delivery is not None:
            free = free.filter(delivery=delivery)
        claimed = free.update(
            lease_owner=token,
            lease_until=until,
            state=MOVES[RunMove.CLAIM].target,
            pending_reason=PendingReason.RUNNING,
            started_at=Coalesce("started_at", Value(now)),
            updated_at=now,
        )
        if not claimed:
            return None
        run = ProcessRun.objects.select_related("invoked_by").get(pk=pk)
    # The ledger is the truth about what earlier deliveries wrote, whatever a dead one left. Read
    # after the claim, not in its statement: a statement that waited on the run's row lock (a
    # delivery that lost the lease, committing its last step) reads the ledger as it was before.
    ledger_position(run)
    lease = Lease(run.pk, token)
    lease.cancel_seen = run.cancel_requested
    return run, lease


def _columns(model: type[Model], alias: str) -> tuple[list[str], list[str]]:
    """The model's concrete columns as ``alias.column`` and their attribute names, in order."""
    fields = model._meta.concrete_fields
    return [f'{alias}."{f.column}"' for f in fields], [f.attname for f in fields]


@cache
def _claim_sql(stale: bool) -> tuple[str, list[str], list[str]]:
    """The PostgreSQL claim's text (``stale``: it also checks the delivery's number), and the
    attribute names of the run's and the invoker's columns it answers, in order: the text
    depends on nothing else, so it is built once, as the lease's is."""
    user_model = get_user_model()
    run_columns, run_names = _columns(ProcessRun, "claimed")
    user_columns, user_names = _columns(user_model, "u")
    run_table = ProcessRun._meta.db_table
    user_table, user_pk = user_model._meta.db_table, user_model._meta.pk.column
    stale_check = ' AND "delivery" = %s' if stale else ""
    sql = (
        f'WITH claimed AS (UPDATE "{run_table}" SET "lease_owner" = %s, "lease_until" = %s,'
        ' "state" = %s, "pending_reason" = %s, "started_at" = COALESCE("started_at", %s),'
        ' "updated_at" = %s'
        ' WHERE "run_id" = %s AND "state" = ANY(%s)'
        ' AND ("lease_until" IS NULL OR "lease_until" < %s)'
        f"{stale_check} RETURNING *)"
        f" SELECT {', '.join(run_columns + user_columns)}"
        f' FROM claimed LEFT JOIN "{user_table}" u ON u."{user_pk}" = claimed."invoked_by_id"'
    )
    return sql, run_names, user_names


def _claimed_returning(
    db: str, run_id: uuid.UUID, delivery: int | None, *, now: Any, until: Any, token: str
) -> ProcessRun | None:
    """The PostgreSQL claim: the UPDATE, the run as it left it and its invoker, in one statement."""
    sql, run_names, user_names = _claim_sql(delivery is not None)
    params: list[Any] = [
        token,
        until,
        MOVES[RunMove.CLAIM].target,
        PendingReason.RUNNING,
        now,
        now,
        run_id,
        list(states_from(RunMove.CLAIM)),
        now,
    ]
    if delivery is not None:
        params.append(delivery)
    conn = connections[db]
    with conn.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    run_values = _converted(conn, ProcessRun, row[: len(run_names)])
    run = ProcessRun.from_db(db, run_names, run_values)
    if run.invoked_by_id is not None:
        user_model = get_user_model()
        user_values = _converted(conn, user_model, row[len(run_names) :])
        ProcessRun._meta.get_field("invoked_by").set_cached_value(
            run, user_model.from_db(db, user_names, user_values)
        )
    return run


def _converted(conn: Any, model: type[Model], values: tuple) -> list:
    """Raw column values as the ORM would load them (JSON parsed, and the like)."""
    out = list(values)
    for index, col, converters in _converters(conn, model):
        for convert in converters:
            out[index] = convert(out[index], col, conn)
    return out


def _converters(conn: Any, model: type[Model]) -> list[tuple[int, Any, list]]:
    """The model's columns that have converters on this connection, worked out once per
    connection (kept on it, as Django keeps its own per-connection state)."""
    memo = conn.__dict__.setdefault("_tb_claim_converters", {})
    known = memo.get(model)
    if known is None:
        known = []
        for index, field in enumerate(model._meta.concrete_fields):
            col = field.get_col(model._meta.db_table)
            converters = conn.ops.get_db_converters(col) + field.get_db_converters(conn)
            if converters:
                known.append((index, col, converters))
        memo[model] = known
    return known
