"""A model row as the parts of a raw INSERT, for the few hot writes that must say more in one
statement than the ORM's INSERT can: ``… ON CONFLICT … DO NOTHING``, or ``INSERT … SELECT … FROM``
a data-modifying CTE, so that two writes (and a check) cost one round trip to the database.

The values are prepared exactly as ``Model.save()`` prepares them (``pre_save`` fills
``auto_now``/``auto_now_add``, ``get_db_prep_save`` adapts JSON, UUIDs, times); the database's own
defaults and constraints apply as for any INSERT.

On PostgreSQL these statements go through ``bound_cursor``: the parameters travel apart from the
SQL (server-side binding) and the statement, whose text is the same for every row, is prepared
once per connection — no client-side quoting of every value, no parse and plan per write.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper

# Text-like columns are cast to ``text``, never to ``varchar(n)``: an explicit cast to a bounded
# type truncates silently, while assigning ``text`` to the column refuses an over-long value as
# the ORM's INSERT does.
_TEXT_TYPES = frozenset({"CharField", "TextField", "SlugField", "EmailField", "URLField"})
# The hot statements are few and their text fixed: prepared at their first execution.
PREPARE_THRESHOLD = 0


@dataclass(frozen=True)
class RowInsert:
    """``INSERT INTO table (columns)`` (``head``), one placeholder per column (``values``, without
    parentheses: for ``VALUES (…)`` or ``SELECT … FROM``) and their ``params``."""

    head: str
    values: str
    params: list


_shapes: dict[tuple[type[models.Model], str], tuple[list[Any], str, str]] = {}


def _shape(conn: BaseDatabaseWrapper, model: type[models.Model]) -> tuple[list[Any], str, str]:
    """The columns an INSERT of ``model`` names, its head and its placeholders — worked out once
    per model and database. On PostgreSQL each placeholder carries its column's type: bound on
    the server, an untyped NULL (or string) in a ``SELECT`` list would be taken as text, which a
    uuid or integer column does not accept."""
    key = (model, conn.alias)
    shape = _shapes.get(key)
    if shape is None:
        meta = model._meta
        quote = conn.ops.quote_name
        fields = [f for f in meta.concrete_fields if f is not meta.auto_field]
        head = f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(str(f.column)) for f in fields)})"
        if conn.vendor == "postgresql":
            casts = [
                "text" if f.get_internal_type() in _TEXT_TYPES else str(f.db_type(conn))
                for f in fields
            ]
            values = ", ".join(f"%s::{cast}" for cast in casts)
        else:
            values = ", ".join(["%s"] * len(fields))
        shape = _shapes[key] = (fields, head, values)
    return shape


def row_insert(conn: BaseDatabaseWrapper, row: models.Model) -> RowInsert:
    """The INSERT of ``row`` on ``conn`` — every concrete column but an auto-increment key."""
    fields, head, values = _shape(conn, type(row))
    return RowInsert(
        head=head,
        values=values,
        params=[f.get_db_prep_save(f.pre_save(row, add=True), conn) for f in fields],
    )


@contextmanager
def bound_cursor(conn: BaseDatabaseWrapper) -> Iterator[Any]:
    """A cursor for the hot statements built by ``row_insert``: on PostgreSQL with server-side
    binding and prepared statements, wrapped as Django wraps its own cursors (so it is logged,
    counted and instrumented like any query); elsewhere ``conn.cursor()``. Django's own cursors
    bind on the client and never prepare, so the connection's threshold set here changes
    nothing for them."""
    if conn.vendor != "postgresql":
        with conn.cursor() as cursor:
            yield cursor
        return
    import psycopg

    conn.ensure_connection()
    conn.validate_thread_sharing()
    raw = conn.connection
    if raw.prepare_threshold != PREPARE_THRESHOLD:
        raw.prepare_threshold = PREPARE_THRESHOLD
    with conn.wrap_database_errors:
        bound: Any = psycopg.Cursor(raw)
    cursor = _logged(bound, conn) if conn.queries_logged else conn.make_cursor(bound)
    with cursor:
        yield cursor


_debug_wrapper: Any = None


def _logged(bound: Any, conn: BaseDatabaseWrapper) -> Any:
    """Django's debug wrapper, logging the statement as written: it reads the logged text back
    from a client-bound cursor's query, which a prepared statement does not keep."""
    global _debug_wrapper
    if _debug_wrapper is None:
        from django.db.backends.postgresql.base import CursorDebugWrapper

        class BoundDebugWrapper(CursorDebugWrapper):
            def debug_sql(self, sql=None, params=None, use_last_executed_query=False, many=False):
                return super().debug_sql(sql, params, use_last_executed_query=False, many=many)

        _debug_wrapper = BoundDebugWrapper
    return _debug_wrapper(bound, conn)


def row_inserted(row: models.Model, db: str, pk: object = None) -> None:
    """Mark ``row`` saved on ``db`` (as ``save()`` does), with the ``pk`` the INSERT returned."""
    if pk is not None:
        row.pk = pk
    row._state.adding, row._state.db = False, db
