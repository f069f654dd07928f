"""The delete part of a group's statement (``records.sql_writes.group_insert``): the data-modifying
CTEs that remove app-owned records and hide connected ones, each only where its record is still
as it was read. Their row counts enter the statement's check (``GroupMoved`` when one fell short).

- ``removed``: an app-owned record's delete — the row and, first, its write states (what the
  ORM's cascade removes with a record).
- ``hidden``: a connected record's delete — hidden (``sync_state`` ``deleting``) as
  ``records.deletes`` hides it alone; its outbound delete and the window's charge are rows the
  statement inserts like any other (``stated``, ``charged``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models

from records.models import Record, RecordWriteState, SyncState
from records.sql_columns import column_name

if TYPE_CHECKING:
    from records.sql_writes import GroupRows


def delete_sources(
    conn: Any, writes: list[tuple[int, GroupRows]], *, cut: bool
) -> tuple[list[str], list, list[str]]:
    """The CTEs of the group's deletes (``writes``: each with its place in the group), their
    params, and the names of the CTEs whose rows count towards the statement's check."""
    ctes, params, counted = [], [], []
    removed = [(n, w) for n, w in writes if w.hidden_from is None]
    hidden = [(n, w) for n, w in writes if w.hidden_from is not None]
    if removed:
        source, values = _delete_source(conn, removed, cut=cut)
        ctes.append(source)
        params += values
        counted.append("removed")
    if hidden:
        source, values = _hide_source(conn, hidden, cut=cut)
        ctes.append(source)
        params += values
        counted.append("hidden")
    return ctes, params, counted


def _delete_source(
    conn: Any, removed: list[tuple[int, GroupRows]], *, cut: bool
) -> tuple[str, list]:
    """The DELETE of the group's removed records, each where it is still at the version read
    (with ``cut``, the writes after the first only while the gate's answer is false), and of
    their write states first."""
    quote = conn.ops.quote_name
    meta = Record._meta
    pk, version = (
        quote(column_name(Record, "pg_row_id")),
        quote(column_name(Record, "sync_version")),
    )
    listed, params = [], []
    for n, write in removed:
        listed.append("(%s::uuid, %s::integer, %s::boolean)")
        params += [write.record.pk, write.version, n == 0 or not cut]
    state_table = quote(RecordWriteState._meta.db_table)
    sql = (
        f"doomed AS (SELECT v.k FROM gate AS g (stop), (VALUES {', '.join(listed)})"
        f" AS v (k, n, first) WHERE v.first OR NOT g.stop),"
        f" unstated AS (DELETE FROM {state_table} WHERE record_id IN (SELECT k FROM doomed)),"
        f" removed AS (DELETE FROM {quote(meta.db_table)} AS r USING doomed AS d,"
        f" (VALUES {', '.join(listed)}) AS v (k, n, first)"
        f" WHERE r.{pk} = d.k AND v.k = d.k AND r.{version} = v.n RETURNING r.{pk})"
    )
    return sql, params + params


def _hide_source(conn: Any, hidden: list[tuple[int, GroupRows]], *, cut: bool) -> tuple[str, list]:
    """The UPDATE hiding the group's connected records, each only where it is still at the
    version and in the sync state read: a record another writer changed, or hid for its own
    delete meanwhile, is not hidden (nor its delete queued) twice."""
    quote = conn.ops.quote_name
    pk, version, state, stamp = (
        quote(column_name(Record, name))
        for name in ("pg_row_id", "sync_version", "sync_state", "updated_at")
    )
    stamp_type = Record._meta.get_field("updated_at")
    assert isinstance(stamp_type, models.Field)
    listed, params = [], []
    for n, write in hidden:
        listed.append("(%s::uuid, %s::integer, %s::text, %s::timestamptz, %s::boolean)")
        at = stamp_type.get_db_prep_save(write.record.updated_at, conn)
        params += [write.record.pk, write.version, write.hidden_from, at, n == 0 or not cut]
    sql = (
        f"hidden AS (UPDATE {quote(Record._meta.db_table)} AS r SET {state} = %s, {stamp} = v.t"
        f" FROM gate AS g (stop), (VALUES {', '.join(listed)}) AS v (k, n, s, t, first)"
        f" WHERE r.{pk} = v.k AND r.{version} = v.n AND r.{state} = v.s"
        f" AND (v.first OR NOT g.stop) RETURNING r.{pk})"
    )
    return sql, [str(SyncState.DELETING), *params]
