"""What the read can read: a registry of resources, each a row source scoped by row-level security.

A ``Resource`` names its columns (name → ORM path and kind) and gives the rows a user may see.
Record types from the catalog are resources without registration: their fixed columns are the
record's own, and the type's declared fields (catalog ``fields``) are keys of the record's
``fields`` JSON — a declared key no row carries yet reads as null, so a migration's
``migrated_at=is.null`` works before the first row is stamped. Any other name is an unknown
column (400, named), as PostgREST answers for a column the table does not have; so are names the
store keeps to itself (``owner``, ``group``, ``record_type``, ``idempotency_key``). A type the
catalog leaves undeclared keeps every well-formed name open.

Higher rooms add their own tables without touching the parser: the processes room calls
``resource_register(Resource(name="process_run", columns=..., rows_visible=runs_visible))`` in its
``AppConfig.ready()``. A registered name wins over a record type of the same name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from django.contrib.auth.models import User
from django.db.models import QuerySet

from records.catalog import SYSTEM_PROTECTED, record_type_get
from records.policies import records_visible
from records.rest.codes import ReadCode
from records.rest.errors import InvalidQuery
from records.rest.parser import NAME


class ColumnKind(StrEnum):
    TEXT = "text"
    UUID = "uuid"
    INTEGER = "integer"
    DATETIME = "datetime"
    BOOLEAN = "boolean"
    JSON = "json"  # a whole JSON column: selectable, filterable with is only
    JSON_KEY = "json_key"  # one key of the resource's open JSON column


@dataclass(frozen=True)
class Column:
    name: str
    path: str  # ORM path on the resource's model; for JSON_KEY, the key itself
    kind: ColumnKind


@dataclass(frozen=True)
class Resource:
    """A readable row source: its columns and the rows a user may see."""

    name: str
    columns: tuple[Column, ...]
    rows_visible: Callable[[User], QuerySet]
    json_field: str | None = None  # the model's JSON column whose keys are open columns
    reserved: frozenset[str] = frozenset()  # never columns, even on an open resource
    order_default: tuple[str, ...] = ()  # column names, when the query orders by nothing
    tiebreaker: str = "pk"  # ORM path appended to every order so pages never overlap
    declared: frozenset[str] | None = (
        None  # the only open column names, when the type declares them
    )

    def column(self, name: str, *, field: str) -> Column:
        """The column ``name`` reads, or 400 ``UNKNOWN_COLUMN`` naming ``field``."""
        for column in self.columns:
            if column.name == name:
                return column
        if (
            self.json_field
            and name not in self.reserved
            and NAME.match(name)
            and (self.declared is None or name in self.declared)
        ):
            return Column(name=name, path=name, kind=ColumnKind.JSON_KEY)
        raise InvalidQuery(
            f"{name!r} is not a column of {self.name}", code=ReadCode.UNKNOWN_COLUMN, field=field
        )


_registered: dict[str, Resource] = {}

RECORD_COLUMNS = (
    Column("pg_row_id", "pg_row_id", ColumnKind.UUID),
    Column("external_id", "external_id", ColumnKind.TEXT),
    Column("sync_state", "sync_state", ColumnKind.TEXT),
    Column("sync_version", "sync_version", ColumnKind.INTEGER),
    Column("synced_at", "synced_at", ColumnKind.DATETIME),
    Column("source_system", "source_system", ColumnKind.TEXT),
    Column("created_at", "created_at", ColumnKind.DATETIME),
    Column("updated_at", "updated_at", ColumnKind.DATETIME),
)
RECORD_RESERVED = SYSTEM_PROTECTED - {c.name for c in RECORD_COLUMNS}


def resource_register(resource: Resource) -> None:
    """Make ``resource`` readable under its name (re-registering a name replaces it)."""
    _registered[resource.name] = resource


def resource_unregister(name: str) -> None:
    _registered.pop(name, None)


def resource_get(name: str) -> Resource:
    """The registered resource ``name``, else the record type (404 ``record_type_not_found``)."""
    if name in _registered:
        return _registered[name]
    record_type = record_type_get(name)
    return Resource(
        name=record_type.name,
        columns=RECORD_COLUMNS,
        rows_visible=lambda user: records_visible(user=user, record_type=record_type),
        json_field="fields",
        reserved=RECORD_RESERVED,
        order_default=("created_at",),
        tiebreaker="pg_row_id",
        declared=frozenset(record_type.fields) if record_type.fields is not None else None,
    )
