"""The front of a read: its first rows of distinct key, and a count of the whole answer's keys.

An ``eachRow`` slice reads its outstanding rows once but works through at most a few hundred of
them; the rest it only counts (seed 000: outstanding is the rows the slice read minus the rows it
finished). ``rest_read_leading`` answers both without building the whole answer in Python: one
aggregate over the query — its own filters, order, ``limit`` and ``offset`` kept — counts the
distinct keys and the rows with one (a row without one is the difference), then the rows are read
in the query's order and kept until ``take`` distinct keys are in hand (a row repeating an earlier
row's key is passed over: a row listed twice is visited once). They are read in pages of ``take``
rows — a LIMIT, so the database sorts for the top rows, not the whole answer — and a page more
only when keys repeated. The byte ceiling bounds the rows read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, F, TextField, Value
from django.db.models.functions import NullIf

from records.rest.errors import InvalidQuery
from records.rest.execute import max_bytes_default, queryset_build, rows_stream
from records.rest.expressions import JsonKeyText
from records.rest.parser import RestQuery, query_parse
from records.rest.resources import Column, ColumnKind, Resource, resource_get

_KEY = "leading_key"  # the annotation the count reads the key from


@dataclass(frozen=True)
class Leading:
    """The first rows of distinct key, the distinct keys of the whole answer, and whether any
    row of the answer has no key (null or empty)."""

    rows: list[dict[str, Any]]
    keys: int
    keyless: bool


def rest_read_leading(
    *, user: User, path_and_query: str, key: str, take: int, max_bytes: int | None = None
) -> Leading:
    """The first ``take`` rows of distinct ``key`` (the row's output name) of ``path_and_query``
    read as ``user``, with the whole answer's key count. Raises as ``rest_read`` does."""
    query = query_parse(path_and_query)
    keys, keyless = _key_count(user, query, key)
    left = max_bytes_default() if max_bytes is None else max_bytes
    taken: dict[str, dict[str, Any]] = {}
    for page in _pages(query, take):
        read = 0
        with closing(rows_stream(user=user, query=page, max_bytes=left)) as rows:
            for row, encoded in rows:
                read, left = read + 1, left - len(encoded) - 1
                value = row.get(key)
                if value in (None, ""):
                    keyless = True  # not selected, or written since the count
                    break
                taken.setdefault(str(value), row)
                if len(taken) >= take:
                    break
        if keyless or len(taken) >= take or read < (page.limit or 0):
            break
    # Rows added between the count and the read are read, so counted.
    return Leading(list(taken.values()), max(keys, len(taken)), keyless)


def _pages(query: RestQuery, take: int) -> Iterator[RestQuery]:
    """The query's answer in pages of ``take`` rows (within its own ``offset`` and ``limit``):
    a page's LIMIT lets the database sort for the top rows, not the whole answer. A page more
    is read only when keys repeated in the one before."""
    start, size = query.offset, max(1, take)
    end = None if query.limit is None else query.offset + query.limit
    while end is None or start < end:
        limit = size if end is None else min(size, end - start)
        yield replace(query, offset=start, limit=limit)
        start += limit


def _key_count(user: User, query: RestQuery, key: str) -> tuple[int, bool]:
    """(distinct keys, any row without one) of the whole answer, in one aggregate.

    The key is read once for the distinct count and once for the rows that have one (an empty
    text is no key: ``NULLIF``); a row without one is a row the second count leaves out. Each
    aggregate reads the key from the row again, so this is two reads of it a row, not five.
    """
    resource = resource_get(query.resource)
    column = _key_column(resource, query, key)
    if column is None:  # not a column the read answers: its rows have no key
        rows = queryset_build(resource, query, user).aggregate(rows=Count("pk"))["rows"]
        return rows, rows > 0
    expression: F | JsonKeyText | NullIf = F(column.path)
    if column.kind is ColumnKind.JSON_KEY:
        expression = JsonKeyText(resource.json_field or "", column.path)
    if column.kind in (ColumnKind.TEXT, ColumnKind.JSON_KEY):
        expression = NullIf(expression, Value(""), output_field=TextField())
    counted = queryset_build(resource, query, user, annotations={_KEY: expression}).aggregate(
        keys=Count(_KEY, distinct=True), keyed=Count(_KEY), rows=Count("pk")
    )
    return counted["keys"], counted["rows"] > counted["keyed"]


def _key_column(resource: Resource, query: RestQuery, key: str) -> Column | None:
    """The column a row's ``key`` is read from: the select item of that name, else (every
    column selected) the resource's column ``key``; None when the rows do not carry it."""
    if query.select is not None:
        named = [item for item in query.select if not item.is_star and item.alias == key]
        if named:
            return resource.column(named[0].column, field="select")
        if not any(item.is_star for item in query.select):
            return None
    try:
        return resource.column(key, field=key)
    except InvalidQuery:
        return None
