"""An update of a record its own group creates, folded into the group without a read.

A chain's update of the record a step before it created (``mixed_chain``: a create, then an
update of it) would otherwise write the group, read the record locked and start a group of its
own. The group holds that record exactly as it will be written — nothing else can have written
it, it does not exist outside the group yet — so the update is checked against it and joins:
``record_update_folded`` runs ``record_update``'s checks and ``before_save`` hooks on the record
as the group leaves it, and ``group_commit`` writes the create's INSERT with the record as the
group's last such update leaves it (and the original where a pending cancel stops the group
after its first write). The update's trail row and its caller's row are written as any.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from guardrails.models import RuleAction
from kernel.rows import row_like
from records.catalog import record_type_get
from records.door import door_opened
from records.errors import SyncVersionMoved
from records.models import HIDDEN_STATES, Record, TrailAction, TrailOutcome
from records.policies import write_entitlement_check
from records.step_writes import UpdateReady
from records.trail import Actor, trail_row
from records.units import WriteUnit, refusing, unit_current
from records.write_rules import before_save_on_update, payload_check, rule_check


@door_opened
def record_update_folded(
    *,
    actor: Actor,
    record_type: str,
    parent: Any,
    base: Record,
    expected_sync_version: int | None = None,
    unit: WriteUnit,
) -> UpdateReady | None:
    """An update of ``base``, a record an earlier write of the group creates (and later ones may
    have changed), made ready without a read: the group wrote nothing yet, so the record is as
    ``base`` holds it. Its checks and ``before_save`` hooks run as ``record_update_ready``'s, on
    that record; the group's statement writes no UPDATE for it, its create's INSERT carries the
    record as the last such update leaves it (``group_commit``). None when it cannot be folded —
    a connected type (its outbound writes go one by one), a record its writer could not reach
    alone — and the caller writes the group and makes it as before."""
    rt = record_type_get(record_type)
    if rt.is_connected or base.record_type != rt.name or not _reachable(actor, base):
        return None
    token = unit_current.set(unit)
    try:
        with refusing(actor, TrailAction.UPDATE, rt.name, base.pk):
            payload_check(rt, parent, None, is_create=False)
            write_entitlement_check(user=actor.user, record_type=rt)
            rule_check(rt, RuleAction.UPDATE)
            expected = expected_sync_version
            if expected is not None and int(expected) != base.sync_version:
                raise SyncVersionMoved(
                    f"expected sync version {expected}, the record is at {base.sync_version}",
                    field="expectedSyncVersion",
                )
            merged = before_save_on_update(actor, rt, base, parent)
    finally:
        unit_current.reset(token)
    record = row_like(base, fields=merged["parent"], sync_version=base.sync_version + 1)
    record.updated_at = timezone.now()
    trail = trail_row(
        actor=actor,
        action=TrailAction.UPDATE,
        record_type=rt.name,
        outcome=TrailOutcome.ALLOWED,
        pg_row_id=base.pk,
    )
    return UpdateReady(actor, record, trail, base.sync_version, base.fields, folded=True)


def _reachable(actor: Actor, record: Record) -> bool:
    """Whether ``records_writable`` would find ``record``, the actor's own new record, without
    reading it: its owner is the actor (every policy lets an owner write) and it is not hidden."""
    return record.owner_id == actor.user.pk and record.sync_state not in HIDDEN_STATES
