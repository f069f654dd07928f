"""``record_write_state`` as a resource of ``/v1/rest``: where a settle conflict's source id is read.

The seed tells a writer whose create met ``write_settle_conflict`` to read the source's id from
``record_write_state.external_id`` (``reason_code = 'write_settle_conflict'``). Rows are scoped as
the records they belong to are: a user sees the write states of the records their type's read
policy shows them (hidden ones included — a delete's write state is what explains it), an
administrator every one. The payload sent upstream is not a column: it can carry fields the
record's own read would show, but under the write's scope, not the reader's.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet

from records.catalog import catalog_load
from records.models import RecordWriteState
from records.policies import policy_q
from records.rest.resources import Column, ColumnKind, Resource

K = ColumnKind

WRITE_STATE_COLUMNS = (
    Column("id", "id", K.INTEGER),
    Column("pg_row_id", "record_id", K.UUID),
    Column("record_type", "record_type", K.TEXT),
    Column("source_system", "source_system", K.TEXT),
    Column("operation", "operation", K.TEXT),
    Column("status", "status", K.TEXT),
    Column("attempts", "attempts", K.INTEGER),
    Column("reason_code", "reason_code", K.TEXT),
    Column("field", "field", K.TEXT),
    Column("message", "message", K.TEXT),
    Column("external_id", "external_id", K.TEXT),
    Column("next_attempt_at", "next_attempt_at", K.DATETIME),
    Column("created_at", "created_at", K.DATETIME),
    Column("updated_at", "updated_at", K.DATETIME),
)


def write_states_visible(user: User) -> QuerySet[RecordWriteState]:
    """Write states of the records the user may read, by each type's read policy."""
    if getattr(user, "is_staff", False):
        return RecordWriteState.reads.all()
    allowed = Q(pk__in=[])
    for record_type in catalog_load().types.values():
        allowed |= Q(record_type=record_type.name) & policy_q(
            user, record_type.read_policy, prefix="record__"
        )
    return RecordWriteState.reads.filter(allowed)


WRITE_STATE_RESOURCE = Resource(
    name="record_write_state",
    columns=WRITE_STATE_COLUMNS,
    rows_visible=write_states_visible,
    order_default=("id",),
    tiebreaker="id",
)
