"""A model row as the parts of a raw INSERT, for the few hot writes that must say more in one
statement than the ORM's INSERT can: ``… ON CONFLICT … DO NOTHING``, or ``INSERT … SELECT … FROM``
a data-modifying CTE, so that two writes (and a check) cost one round trip to the database.

The values are prepared exactly as ``Model.save()`` prepares them (``pre_save`` fills
``auto_now``/``auto_now_add``, ``get_db_prep_save`` adapts JSON, UUIDs, times); the database's own
defaults and constraints apply as for any INSERT.

On PostgreSQL these statements go through ``bound_cursor``: the parameters travel apart from the
SQL (server-side binding) and the statement, whose text is the same for every row, is prepared
once per connection — no client-side quoting of every value, no parse and plan per write. Its
``%s`` placeholders are numbered (``$1`` …) once per statement text, not parsed at every
execution: psycopg caches its own parse only for statements of at most 4 KB and 50 parameters,
and a step's statement is larger.
"""

from __future__ import annotations

import copy
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

import psycopg
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


# The columns whose value the database driver takes as the model holds it, when it is exactly
# of these types (not a subclass: a str enum), so ``get_db_prep_save`` would hand it on unchanged:
# read straight off the row, without Django's per-field calls. (Integers are not: on PostgreSQL
# Django sends them typed, ``Int4``/``Int8``.)
_AS_HELD: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(("CharField", "TextField", "SlugField", "EmailField", "URLField"), (str,)),
    "BooleanField": (bool,),
}

# How one column's value is read off a row, worked out once per model and database: its
# attname; the types taken as held (``_as_held``); the internal type when it is an integer whose
# value Django adapts in one call (``_integer_kind``); whether ``pre_save`` is a plain read of the
# attribute; and the field's bound ``pre_save`` and ``get_db_prep_save``.
Slot = tuple[str, tuple[type, ...], str | None, bool, Any, Any]
Shape = tuple[str, str, list[Slot]]
_shapes: dict[tuple[type[models.Model], str], Shape] = {}
_PREPARING = ("pre_save", "get_db_prep_save", "get_db_prep_value", "get_prep_value")


def _as_held(conn: BaseDatabaseWrapper, field: Any) -> tuple[type, ...]:
    """The types of ``field``'s value that go to the driver as they are (``_AS_HELD``; a
    foreign key as its target's; a uuid on PostgreSQL, which has the type), None included; ()
    for a field whose ``pre_save`` computes its value (``auto_now``) or whose values are adapted."""
    if type(field).pre_save is not models.Field.pre_save:
        return ()
    kind = (field.target_field if field.is_relation else field).get_internal_type()
    if kind == "UUIDField" and conn.vendor == "postgresql":
        return (uuid.UUID, type(None))
    held = _AS_HELD.get(kind, ())
    return (*held, type(None)) if held else ()


def _integer_kind(field: Any) -> str | None:
    """``field``'s internal type if it is an integer column (not a key) that prepares its values
    as ``IntegerField`` does and nothing else: then an ``int`` (exactly) or None goes to the
    database as ``connection.ops.adapt_integerfield_value(value, kind)`` — what
    ``get_db_prep_save`` ends in after ``int(value)`` (the value itself) — in one call instead of
    five. None for anything else."""
    if field.is_relation or not isinstance(field, models.IntegerField):
        return None
    for cls in type(field).__mro__:
        if cls is models.Field:
            return str(field.get_internal_type())
        if cls is not models.IntegerField and any(name in vars(cls) for name in _PREPARING):
            return None
    return None


def _slot(conn: BaseDatabaseWrapper, field: Any) -> Slot:
    is_read = type(field).pre_save is models.Field.pre_save
    return (
        field.attname,
        _as_held(conn, field),
        _integer_kind(field) if is_read else None,
        is_read,
        field.pre_save,
        field.get_db_prep_save,
    )


def _shape(conn: BaseDatabaseWrapper, model: type[models.Model]) -> Shape:
    """The columns an INSERT of ``model`` names, its head, its placeholders and which values go
    as held (``_as_held``) — worked out once per model and database. On PostgreSQL each
    placeholder carries its column's type: bound on the server, an untyped NULL (or string) in
    a ``SELECT`` list would be taken as text, which a uuid or integer column does not accept."""
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
        shape = _shapes[key] = (head, values, [_slot(conn, f) for f in fields])
    return shape


def row_insert(conn: BaseDatabaseWrapper, row: models.Model) -> RowInsert:
    """The INSERT of ``row`` on ``conn`` — every concrete column but an auto-increment key."""
    head, values, slots = _shape(conn, type(row))
    adapt_integer = conn.ops.adapt_integerfield_value
    params: list[Any] = []
    append = params.append
    for attname, held, integer_kind, is_read, pre_save, prep_save in slots:
        if not is_read:  # auto_now and the like: the field computes (and sets) its value
            append(prep_save(pre_save(row, add=True), conn))
            continue
        value = getattr(row, attname)  # what pre_save answers
        kind = type(value)
        if kind in held:
            append(value)
        elif integer_kind is not None and (kind is int or value is None):
            append(adapt_integer(value, integer_kind))
        else:
            append(prep_save(value, conn))
    return RowInsert(head=head, values=values, params=params)


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
    conn.ensure_connection()
    conn.validate_thread_sharing()
    raw = conn.connection
    if raw.prepare_threshold != PREPARE_THRESHOLD:
        raw.prepare_threshold = PREPARE_THRESHOLD
    with conn.wrap_database_errors:
        bound: Any = _NumberedCursor(raw)
    cursor = _logged(bound, conn) if conn.queries_logged else conn.make_cursor(bound)
    with cursor:
        yield cursor


_PLACEHOLDER = re.compile(r"%s")


@lru_cache(maxsize=256)
def numbered(sql: str) -> str:
    """``sql`` with its ``%s`` placeholders as PostgreSQL's own ``$1``, ``$2`` … (the hot
    statements hold no literal ``%``)."""
    count = iter(range(1, 1 << 16))
    return _PLACEHOLDER.sub(lambda _: f"${next(count)}", sql)


class _NumberedCursor(psycopg.RawCursor):
    """A psycopg ``RawCursor`` (native ``$n`` placeholders: nothing to parse per execution)
    that takes the ``%s`` statements ``row_insert`` builds, numbered once (``numbered``)."""

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        return super().execute(numbered(query), params, **kwargs)


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


_M = TypeVar("_M", bound=models.Model)


def row_like(shared: _M, **values: Any) -> _M:
    """A new, unsaved row with ``shared``'s column values and cached related objects, then
    ``values`` set (a foreign key by its name goes through its descriptor, as in the
    constructor) — a copy (``copy.copy``: the model's own pickling protocol, which copies its
    state and related-object cache), not ``Model.__init__``, whose per-field work is most of
    what a hot row costs to build. ``shared`` is never saved itself; it holds what many rows
    have in common."""
    row = copy.copy(shared)
    for name, value in values.items():
        setattr(row, name, value)
    return row
