"""A migration batch's new records, inserted with one statement (``records.batch_writes``).

A create of a type nothing is shown — no ``before_save`` hooks, no watchers — is kept as its own
columns (``NewRecord``) beside the record its actor's creates of the type share
(``records.boundary.record_shared``): no model instance a row. A create of a type with hooks or
watchers is a ``Record`` (they are shown it). Both insert alike: the columns that differ per row
from each, every other column from the first create's record.
"""

from __future__ import annotations

import uuid
from typing import Any, NamedTuple

from kernel.bulk import rows_insert
from kernel.rows import row_like
from records.models import Record


class NewRecord(NamedTuple):
    """A create's record as its columns: its own, and ``shared``'s for the rest."""

    pg_row_id: uuid.UUID
    shared: Record
    fields: Any
    lines: Any
    idempotency_key: str

    @property
    def external_id(self) -> None:
        return None  # a new record has none until its source names it

    @property
    def record_type(self) -> str:
        return self.shared.record_type

    @property
    def source_system(self) -> str:
        return self.shared.source_system

    @property
    def sync_state(self) -> str:
        return self.shared.sync_state

    @property
    def owner_id(self) -> Any:
        return self.shared.owner_id

    @property
    def group_id(self) -> Any:
        return self.shared.group_id


def records_insert(creates: list[Record | NewRecord]) -> None:
    """Insert ``creates`` in one statement; a ``Record`` among them takes the stored times."""
    first = creates[0]
    # The template's columns are every row's but those named below; a copy, so that the
    # shared record (remembered per user) is not stamped with this batch's times.
    template = first if isinstance(first, Record) else row_like(first.shared)
    rows_insert(
        Record,
        template,
        {
            "pg_row_id": [r.pg_row_id for r in creates],
            "record_type": [r.record_type for r in creates],
            "source_system": [r.source_system for r in creates],
            "sync_state": [r.sync_state for r in creates],
            "owner_id": [r.owner_id for r in creates],
            "group_id": [r.group_id for r in creates],
            "fields": [r.fields for r in creates],
            "lines": [r.lines for r in creates],
            "idempotency_key": [r.idempotency_key for r in creates],
        },
    )
    for record in creates:  # the template's times are every row's
        if isinstance(record, Record):
            record.created_at, record.updated_at = template.created_at, template.updated_at
