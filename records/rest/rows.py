"""A read's rows as the answer holds them: the columns a ``select`` names, each row built from the
fetched values (a JSON key from the record's document) and encoded, measured against the ceiling."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet

from records.rest.errors import ResponseTooLarge
from records.rest.parser import SelectItem
from records.rest.resources import Column, ColumnKind, Resource


@dataclass(frozen=True)
class ReadPlan:
    """A read resolved: the rows' queryset (``values_list`` of ``fetched``) and how to encode them."""

    resource: Resource
    select: list[tuple[str, Column]]
    rows: QuerySet
    fetched: list[str]
    is_every_key: bool
    ceiling: int
    ceiling_name: str


def rows_encoded(
    plan: ReadPlan, values: Iterable[tuple[Any, ...]]
) -> Generator[tuple[dict[str, Any], bytes], None, None]:
    """Each fetched row as ``(row, its JSON bytes)``, measured as it is encoded: ``ResponseTooLarge``
    at the first row that takes the answer past the ceiling."""
    size = 2  # the array's brackets
    for count, fetched_values in enumerate(values):
        record = dict(zip(plan.fetched, fetched_values, strict=True))
        row = _row_build(plan.select, record, plan.resource, is_every_key=plan.is_every_key)
        encoded = json.dumps(row, separators=(",", ":"), ensure_ascii=False).encode()
        size += len(encoded) + (1 if count else 0)
        if size > plan.ceiling:
            raise ResponseTooLarge(
                f"the answer to this read is larger than the read byte ceiling of {plan.ceiling} "
                f"bytes ({plan.ceiling_name}); ask for a page with limit and offset, or filter more",
                field=None,
            )
        yield row, encoded


def select_resolve(
    resource: Resource, select: tuple[SelectItem, ...] | None
) -> list[tuple[str, Column]]:
    if select is None:
        return [(c.name, c) for c in resource.columns]
    out: list[tuple[str, Column]] = []
    for item in select:
        if item.is_star:
            out.extend((c.name, c) for c in resource.columns)
        else:
            out.append((item.alias, resource.column(item.column, field="select")))
    return out


def _row_build(
    select: list[tuple[str, Column]],
    record: dict[str, Any],
    resource: Resource,
    *,
    is_every_key: bool,
) -> dict[str, Any]:
    document = record.get(resource.json_field) if resource.json_field else None
    document = document if isinstance(document, dict) else {}
    row: dict[str, Any] = {}
    for alias, column in select:
        if column.kind is ColumnKind.JSON_KEY:
            row[alias] = document.get(column.path)
        else:
            row[alias] = _jsonable(record[column.path])
    if is_every_key:
        for key, value in document.items():
            row.setdefault(key, value)
    return row


def _jsonable(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return value
