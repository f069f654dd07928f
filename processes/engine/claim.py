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
from django.db.models import Q, Value
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


# The invoker's columns ride in the claim's answer under these names (the run's own columns are
# the run's); ``RawQuerySet`` sets a column that is no field of the run as an attribute.
_INVOKER = "_tb_invoker__"


@cache
def _claim_sql(stale: bool) -> tuple[str, tuple[str, ...]]:
    """The PostgreSQL claim's text (``stale``: it also checks the delivery's number), and the
    attribute names of the invoker's columns it answers after the run's: the text depends on
    nothing else, so it is built once."""
    user_model = get_user_model()
    user_fields = user_model._meta.concrete_fields
    user_columns = ", ".join(f'u."{f.column}" AS "{_INVOKER}{f.attname}"' for f in user_fields)
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
        f" SELECT claimed.*, {user_columns}"
        f' FROM claimed LEFT JOIN "{user_table}" u ON u."{user_pk}" = claimed."invoked_by_id"'
    )
    return sql, tuple(f.attname for f in user_fields)


def _claimed_returning(
    db: str, run_id: uuid.UUID, delivery: int | None, *, now: Any, until: Any, token: str
) -> ProcessRun | None:
    """The PostgreSQL claim: the UPDATE, the run as it left it and its invoker, in one statement
    — read through ``RawQuerySet`` (the ORM converts the run's columns as any query's) and the
    invoker built from its columns by ``Model.from_db``."""
    sql, user_names = _claim_sql(delivery is not None)
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
    claimed = list(ProcessRun.objects.using(db).raw(sql, params))
    if not claimed:
        return None
    run = claimed[0]
    values = [run.__dict__.pop(f"{_INVOKER}{name}") for name in user_names]
    if run.invoked_by_id is not None:
        run.invoked_by = get_user_model().from_db(db, list(user_names), values)
    return run
