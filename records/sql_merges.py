"""A migration batch's updates of records it locked, merged by the database in one statement
(the records room's hand-built write beside ``records.sql_writes``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.db import IntegrityError, connections, router

from records.models import Record
from records.sql_columns import column_name


def fields_merge(rows: Sequence[tuple[Any, dict, int]], at: Any) -> None:
    """Merge each ``(pg_row_id, changes, version)``'s changes into its record's fields (top-level
    keys, as ``dict.update``), its version one more and ``updated_at`` ``at`` — the records locked
    by the caller. On PostgreSQL one UPDATE from one JSON document (``fields || changes``: the
    fields are never read); elsewhere one read of the fields and one ``executemany``. A record
    whose version is not ``version`` (the guard) is not written and raises ``IntegrityError``."""
    Record._default_manager.bulk_update([], ["fields"])  # the manager's own guard (records' door)
    conn = connections[router.db_for_write(Record)]
    table = conn.ops.quote_name(Record._meta.db_table)
    pk, fields, version, updated = (
        conn.ops.quote_name(column_name(Record, name))
        for name in ("pg_row_id", "fields", "sync_version", "updated_at")
    )
    at = conn.ops.adapt_datetimefield_value(at)
    with conn.cursor() as cursor:
        if conn.vendor == "postgresql":
            document = [{"i": str(i), "c": changes, "v": v} for i, changes, v in rows]
            cursor.execute(
                f"UPDATE {table} AS r SET {fields} = r.{fields} || v.c, {version} = v.v + 1,"
                f" {updated} = %s FROM jsonb_to_recordset(%s::jsonb) AS v(i uuid, c jsonb, v integer)"
                f" WHERE r.{pk} = v.i AND r.{version} = v.v",
                [at, json.dumps(document, separators=(",", ":"))],
            )
        else:
            ids = [i for i, _, _ in rows]
            stored = dict(Record.reads.filter(pk__in=ids).values_list("pk", "fields"))
            params = [
                (json.dumps({**stored.get(i, {}), **changes}), at, i.hex, v)
                for i, changes, v in rows
            ]
            cursor.executemany(
                f"UPDATE {table} SET {fields} = %s, {version} = {version} + 1, {updated} = %s"
                f" WHERE {pk} = %s AND {version} = %s",
                params,
            )
        written = cursor.rowcount
    if written != len(rows):
        raise IntegrityError("a record's version moved since it was locked")
