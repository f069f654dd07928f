"""A model row as the parts of a raw INSERT, for the few hot writes that must say more in one
statement than the ORM's INSERT can: ``… ON CONFLICT … DO NOTHING``, or ``INSERT … SELECT … FROM``
a data-modifying CTE, so that two writes (and a check) cost one round trip to the database.

The values are prepared exactly as ``Model.save()`` prepares them (``pre_save`` fills
``auto_now``/``auto_now_add``, ``get_db_prep_save`` adapts JSON, UUIDs, times); the database's own
defaults and constraints apply as for any INSERT.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper


@dataclass(frozen=True)
class RowInsert:
    """``INSERT INTO table (columns)`` (``head``), one placeholder per column (``values``, without
    parentheses: for ``VALUES (…)`` or ``SELECT … FROM``) and their ``params``."""

    head: str
    values: str
    params: list


def row_insert(conn: BaseDatabaseWrapper, row: models.Model) -> RowInsert:
    """The INSERT of ``row`` on ``conn`` — every concrete column but an auto-increment key."""
    meta = row._meta
    fields = [f for f in meta.concrete_fields if f is not meta.auto_field]
    names = ", ".join(conn.ops.quote_name(str(f.column)) for f in fields)
    return RowInsert(
        head=f"INSERT INTO {conn.ops.quote_name(meta.db_table)} ({names})",
        values=", ".join(["%s"] * len(fields)),
        params=[f.get_db_prep_save(f.pre_save(row, add=True), conn) for f in fields],
    )


def row_inserted(row: models.Model, db: str, pk: object = None) -> None:
    """Mark ``row`` saved on ``db`` (as ``save()`` does), with the ``pk`` the INSERT returned."""
    if pk is not None:
        row.pk = pk
    row._state.adding, row._state.db = False, db
