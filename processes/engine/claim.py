"""Claiming a run for one delivery: its lease taken, the run read with what the delivery needs.

The claim is one conditional UPDATE: it takes the lease only while the run may be claimed (a
state a delivery may start from, no live lease, this delivery's number), and moves a queued run
to running, so a cancel can never be overwritten. On PostgreSQL the same statement answers the
run as the UPDATE left it, its invoker, the invoker's first group (the group a new record is
filed under, ``records.policies.default_group``) and its process's switch (``UPDATE …
RETURNING`` in a CTE, joined); elsewhere (SQLite) the ORM reads the run and invoker after.

A run no delivery has claimed before (the claim set its ``started_at``) has an empty ledger:
nothing to read. Otherwise ``ledger_position`` gives the counts a delivery keeps in memory: on
PostgreSQL one index row of the ledger (its top sequence) and the run row's ``writes``.

On PostgreSQL, outside a caller's transaction, the claim commits without waiting for its WAL to
reach the disk (``synchronous_commit`` off for its own transaction only). That is safe because
the claim promises nothing durable: every write of the delivery proves the lease in its own
statement, and a later durable commit flushes the claim's WAL with its own. Should the database
lose the claim in a crash, the run is as it was before it (queued, or its old lease): the
delivery's first proof finds no lease and writes nothing (``LeaseLost``), and the redelivery
watch sends the run again as it does any delivery lost before its claim.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from itertools import accumulate
from typing import Any, Generic, TypeVar

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connections, models, router
from django.db.models import Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from kernel.ids import uuid_or_none
from kernel.rows import bound_cursor
from processes.engine.lease import Lease, lease_seconds
from processes.engine.ledger import ledger_position, ledger_position_empty
from processes.models import PendingReason, Process, ProcessRun
from processes.status import MOVES, RunMove, states_from
from records.policies import default_group_known


def run_claim(run_id: str, delivery: int | None = None) -> tuple[ProcessRun, Lease] | None:
    """Take the run's lease if it is free (or expired). None when another delivery has it, the
    run ended, or ``delivery`` is stale (a later enqueue superseded it)."""
    pk = uuid_or_none(str(run_id))
    if pk is None:  # no run has it
        return None
    now, token = timezone.now(), uuid.uuid4().hex
    until = now + timedelta(seconds=lease_seconds())
    db = router.db_for_write(ProcessRun)
    switch: bool | None = None
    if connections[db].vendor == "postgresql":
        claimed = _claimed_returning(db, pk, delivery, now=now, until=until, token=token)
        if claimed is None:
            return None
        run, switch = claimed
    else:
        free = ProcessRun.objects.filter(pk=pk, state__in=states_from(RunMove.CLAIM)).filter(
            Q(lease_until__isnull=True) | Q(lease_until__lt=now)
        )
        if delivery is not None:
            free = free.filter(delivery=delivery)
        claimed_count = free.update(
            lease_owner=token,
            lease_until=until,
            state=MOVES[RunMove.CLAIM].target,
            pending_reason=PendingReason.RUNNING,
            started_at=Coalesce("started_at", Value(now)),
            updated_at=now,
        )
        if not claimed_count:
            return None
        run = ProcessRun.objects.select_related("invoked_by").get(pk=pk)
    # This claim started the run (and no delivery's write carried ``slices`` yet): nothing was
    # written for it before. Both, because a frozen clock (``turbobase.testing``) repeats ``now``.
    if run.started_at == now and not run.slices:
        ledger_position_empty(run)
    else:
        # The ledger is the truth about what earlier deliveries wrote, whatever a dead one left.
        # Read after the claim, not in its statement: a statement that waited on the run's row
        # lock (a delivery that lost the lease, committing its last step) reads the ledger as it
        # was before.
        ledger_position(run)
    lease = Lease(run.pk, token)
    lease.cancel_seen = run.cancel_requested
    lease.switch_seen = switch
    return run, lease


_M = TypeVar("_M", bound=models.Model)


@dataclass(frozen=True)
class _Model(Generic[_M]):
    """One model's columns in the claim's answer, with what building its instance needs worked
    out once: the attribute names, and the fields the ORM converts on a read (``from_db_value``:
    a JSON column's text parsed), by position."""

    model: type[_M]
    fields: tuple[models.Field, ...]
    attnames: tuple[str, ...]
    converted: tuple[tuple[int, models.Field], ...]

    @classmethod
    def of(cls, model: type[_M]) -> _Model[_M]:
        fields = tuple(model._meta.concrete_fields)
        return cls(
            model,
            fields,
            tuple(f.attname for f in fields),
            tuple((at, f) for at, f in enumerate(fields) if hasattr(f, "from_db_value")),
        )

    def built(self, db: str, values: Any) -> _M:
        """An instance from its columns as the database answered them, converted as the ORM
        converts a read, built by ``Model.from_db``."""
        values, conn = list(values), connections[db]
        for at, field in self.converted:
            values[at] = field.from_db_value(values[at], None, conn)  # type: ignore[attr-defined]
        return self.model.from_db(db, self.attnames, values)


@dataclass(frozen=True)
class _ClaimText:
    """The PostgreSQL claim's statement and the models its answer's columns belong to, in order:
    the run's, its invoker's, the invoker's first group's, then the process's switch."""

    sql: str
    run: _Model[ProcessRun]
    user: _Model[Any]
    group: _Model[Group]


def _columns(alias: str, fields: tuple[models.Field, ...]) -> str:
    return ", ".join(f'{alias}."{f.column}"' for f in fields)


@cache
def _claim_text(stale: bool, lazy_commit: bool) -> _ClaimText:
    """The PostgreSQL claim (``stale``: it also checks the delivery's number; ``lazy_commit``: its
    transaction commits without waiting for the disk): its text depends on nothing else, so it is
    built once — and prepared once per connection (``bound_cursor``)."""
    user_model = get_user_model()
    run, user, group = _Model.of(ProcessRun), _Model.of(user_model), _Model.of(Group)
    run_fields, user_fields, group_fields = run.fields, user.fields, group.fields
    groups = user_model._meta.get_field("groups")
    member_table = groups.remote_field.through._meta.db_table  # type: ignore[union-attr]
    stale_check = ' AND "delivery" = %s' if stale else ""
    lazy = ", set_config('synchronous_commit', 'off', true)" if lazy_commit else ""
    sql = (
        f'WITH claimed AS (UPDATE "{ProcessRun._meta.db_table}" SET "lease_owner" = %s,'
        ' "lease_until" = %s, "state" = %s, "pending_reason" = %s,'
        ' "started_at" = COALESCE("started_at", %s), "updated_at" = %s'
        ' WHERE "run_id" = %s AND "state" = ANY(%s)'
        ' AND ("lease_until" IS NULL OR "lease_until" < %s)'
        f"{stale_check} RETURNING *)"
        f" SELECT {_columns('claimed', run_fields)}, {_columns('u', user_fields)},"
        f' {_columns("g", group_fields)}, p."is_enabled"{lazy}'
        f' FROM claimed LEFT JOIN "{user_model._meta.db_table}" u'
        f' ON u."{user_model._meta.pk.column}" = claimed."invoked_by_id"'
        f' LEFT JOIN "{Process._meta.db_table}" p ON p."id" = claimed."process_id"'
        f" LEFT JOIN LATERAL (SELECT {_columns('gg', group_fields)}"
        f' FROM "{Group._meta.db_table}" gg JOIN "{member_table}" m'
        f' ON m."{groups.m2m_reverse_name()}" = gg."{Group._meta.pk.column}"'
        f' WHERE m."{groups.m2m_column_name()}" = claimed."invoked_by_id"'
        ' ORDER BY gg."name" LIMIT 1) g ON TRUE'
    )
    return _ClaimText(sql, run, user, group)


def _claimed_returning(
    db: str, run_id: uuid.UUID, delivery: int | None, *, now: Any, until: Any, token: str
) -> tuple[ProcessRun, bool] | None:
    """The PostgreSQL claim: the UPDATE, the run as it left it, its invoker (with the invoker's
    first group remembered on it) and its process's switch, in one prepared statement; the
    instances built from their columns by ``Model.from_db``."""
    conn = connections[db]
    text = _claim_text(delivery is not None, not conn.in_atomic_block)
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
    with bound_cursor(conn) as cursor:
        cursor.execute(text.sql, params)
        answer = cursor.fetchone()
    if answer is None:
        return None
    ends = list(accumulate((len(text.run.fields), len(text.user.fields), len(text.group.fields))))
    run = text.run.built(db, answer[: ends[0]])
    if run.invoked_by_id is not None:
        run.invoked_by = text.user.built(db, answer[ends[0] : ends[1]])
        group_values = answer[ends[1] : ends[2]]
        group = None if group_values[0] is None else text.group.built(db, group_values)
        default_group_known(run.invoked_by, group)
    return run, bool(answer[ends[2]])
