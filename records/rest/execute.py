"""Run a ``RestQuery`` on a resource, as a user, under row-level security, within a byte ceiling.

``rest_read`` is the one entry point: ``/v1/rest`` calls it and so will the engine's ``ctx.query``.
It answers the whole result or raises — never a shortened answer, because a step reads in order
to decide what to write. Rows are streamed from the database and measured as they are encoded;
the read stops at the first row that takes the answer past the ceiling
(the instance setting ``rest.max_response_bytes``, default 10 MiB, or the caller's ``max_bytes``) and fails
``READ_BYTE_CEILING`` naming it, so no unbounded list is built first.

Comparison rules (PostgREST's, made to hold on SQLite too):
- A query-string value is text. On a JSON key, eq/neq/in/like/ilike compare the key's text form
  (``->>``): ``status=eq.pending`` matches ``"pending"``, ``n=eq.1`` matches ``1`` and ``"1"`` but
  not ``1.0``. gt/gte/lt/lte compare numerically when the value parses as a JSON number
  (``amount=gt.10`` matches ``10.5``, never ``"abc"`` or ``"11"``), and as text otherwise
  (``due=gte.2024-01-01`` orders ISO dates). ``is.true``/``is.false`` match JSON booleans only;
  ``is.null`` matches a JSON null or a missing key.
- On a fixed column the value is parsed to the column's type (bad value → 400 naming it).
- SQL three-valued logic, as PostgREST: a null matches neither ``eq``, ``neq`` nor ``not.eq``.
- Order: ascending puts nulls last, descending first, unless ``nullsfirst``/``nullslast`` says;
  every order ends with the resource's tiebreaker (``pg_row_id``) so limit/offset pages are stable.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Generator
from typing import Any, cast

from django.contrib.auth.models import User
from django.db.models import F, Q, QuerySet, TextField, Value
from django.db.models.expressions import OrderBy
from django.db.models.functions import Coalesce
from django.db.models.lookups import (
    Exact,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
)
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from records.rest.codes import ReadCode
from records.rest.errors import InvalidQuery, ReadNotAuthenticated
from records.rest.expressions import (
    ILike,
    JsonKeyNumber,
    JsonKeyOrder,
    JsonKeyText,
    JsonKeyType,
    Like,
)
from records.rest.parser import Filter, Operator, RestQuery, query_parse
from records.rest.resources import Column, ColumnKind, Resource, resource_get
from records.rest.rows import ReadPlan, rows_encoded, select_resolve

CHUNK_SIZE = 500
# The widest integer a column holds (and SQLite binds).
INT64_MAX = 2**63 - 1
JSON_NUMBER = re.compile(r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$")
_COMPARISONS = {
    Operator.GT: GreaterThan,
    Operator.GTE: GreaterThanOrEqual,
    Operator.LT: LessThan,
    Operator.LTE: LessThanOrEqual,
}
_OPERATORS_BY_KIND = {
    ColumnKind.TEXT: frozenset(Operator),
    ColumnKind.UUID: frozenset({Operator.EQ, Operator.NEQ, Operator.IN, Operator.IS}),
    ColumnKind.INTEGER: frozenset(Operator) - {Operator.LIKE, Operator.ILIKE},
    ColumnKind.DATETIME: frozenset(Operator) - {Operator.LIKE, Operator.ILIKE},
    ColumnKind.BOOLEAN: frozenset({Operator.EQ, Operator.NEQ, Operator.IS}),
    ColumnKind.JSON: frozenset({Operator.IS}),
    ColumnKind.JSON_KEY: frozenset(Operator),
}


def rest_read(
    *, user: User, path_and_query: str, max_bytes: int | None = None
) -> list[dict[str, Any]]:
    """Read ``resource?query`` as ``user``: every matching row the user may see, or a named error.

    Raises ``InvalidQuery`` (400), ``RpcNotSupported`` (400), ``RecordTypeNotFound`` (404),
    ``ResponseTooLarge`` (413, ``READ_BYTE_CEILING``) or ``ReadNotAuthenticated`` (401).
    """
    query = query_parse(path_and_query)
    return [row for row, _ in rows_stream(user=user, query=query, max_bytes=max_bytes)]


def rest_read_encoded(*, user: User, query: RestQuery, max_bytes: int | None = None) -> bytes:
    """The same read as one JSON array, already encoded (the view sends these bytes as they are)."""
    rows = rows_stream(user=user, query=query, max_bytes=max_bytes)
    return b"[" + b",".join(encoded for _, encoded in rows) + b"]"


def max_bytes_default() -> int:
    return setting_get(SettingKey.REST_MAX_RESPONSE_BYTES)


def rows_stream(
    *, user: User, query: RestQuery, max_bytes: int | None = None
) -> Generator[tuple[dict[str, Any], bytes], None, None]:
    """Yield ``(row, its JSON bytes)``; raise ``ResponseTooLarge`` once past the ceiling."""
    plan = read_plan(user=user, query=query, max_bytes=max_bytes)
    # QuerySet.iterator() is a generator (the stubs say Iterator): it is closed below.
    stream = cast(Generator[tuple[Any, ...], None, None], plan.rows.iterator(chunk_size=CHUNK_SIZE))
    try:
        yield from rows_encoded(plan, stream)
    finally:
        # Close the server-side cursor now, not whenever the abandoned generator is collected.
        stream.close()


def read_plan(*, user: User, query: RestQuery, max_bytes: int | None = None) -> ReadPlan:
    """The read ``query`` makes as ``user``, not yet sent; ``ReadNotAuthenticated`` without a user."""
    if user is None or not getattr(user, "is_authenticated", False):
        raise ReadNotAuthenticated("a read runs as a signed-in user", field=None)
    resource = resource_get(query.resource)
    select = select_resolve(resource, query.select)
    rows = queryset_build(resource, query, user)
    paths = [c.path for _, c in select if c.kind is not ColumnKind.JSON_KEY]
    # No select, or ``*``, means every column: the fixed ones, then each row's own JSON keys.
    is_every_key = query.select is None or any(item.is_star for item in query.select)
    needs_json = resource.json_field is not None and (
        is_every_key or any(c.kind is ColumnKind.JSON_KEY for _, c in select)
    )
    json_field = resource.json_field if needs_json else None
    fetched = list(dict.fromkeys(paths + ([json_field] if json_field else [])))
    return ReadPlan(
        resource=resource,
        select=select,
        rows=rows.values_list(*fetched),
        fetched=fetched,
        is_every_key=is_every_key,
        ceiling=max_bytes_default() if max_bytes is None else max_bytes,
        ceiling_name="rest.max_response_bytes" if max_bytes is None else "this read's byte budget",
    )


def queryset_build(
    resource: Resource, query: RestQuery, user: User, *, annotations: dict[str, Any] | None = None
) -> QuerySet:
    """The rows ``query`` reads of ``resource`` as ``user``: filtered, ordered, paged; each row
    carrying ``annotations`` (added before the page is cut, so an aggregate over them sees it)."""
    rows = resource.rows_visible(user)
    if annotations:
        rows = rows.annotate(**annotations)
    for flt in query.filters:
        rows = rows.filter(_filter_q(resource, flt))
    rows = rows.order_by(*_ordering(resource, query))
    if query.limit is not None:
        return rows[query.offset : query.offset + query.limit]
    return rows[query.offset :] if query.offset else rows


def _ordering(resource: Resource, query: RestQuery) -> list[OrderBy]:
    ordering: list[OrderBy] = []
    if query.order:
        terms = [
            (resource.column(t.column, field="order"), t.is_descending, t.nulls_first)
            for t in query.order
        ]
    else:
        terms = [
            (resource.column(name, field="order"), False, None) for name in resource.order_default
        ]
    for column, is_descending, nulls_first in terms:
        expression: JsonKeyOrder | F
        if column.kind is ColumnKind.JSON_KEY:
            expression = JsonKeyOrder(_json_field(resource), column.path)
        else:
            expression = F(column.path)
        if nulls_first is None:
            nulls_first = is_descending  # PostgreSQL's default, made explicit so SQLite agrees
        ordering.append(
            OrderBy(
                expression,
                descending=is_descending,
                nulls_first=True if nulls_first else None,
                nulls_last=True if not nulls_first else None,
            )
        )
    ordering.append(OrderBy(F(resource.tiebreaker)))
    return ordering


def _filter_q(resource: Resource, flt: Filter) -> Q:
    column = resource.column(flt.column, field=flt.column)
    if flt.operator not in _OPERATORS_BY_KIND[column.kind]:
        raise InvalidQuery(
            f"{flt.operator.value} does not apply to {column.name} ({column.kind.value})",
            code=ReadCode.OPERATOR_NOT_APPLICABLE,
            field=flt.column,
        )
    if column.kind is ColumnKind.JSON_KEY:
        condition = _json_key_condition(_json_field(resource), column, flt)
    else:
        condition = _column_condition(column, flt)
    return ~condition if flt.is_negated else condition


def _json_field(resource: Resource) -> str:
    """The JSON column behind a JSON-key column (``Resource.column`` makes those only when it has one)."""
    if resource.json_field is None:
        raise AssertionError(f"{resource.name} has no JSON field but resolved a JSON-key column")
    return resource.json_field


def _json_key_condition(json_field: str, column: Column, flt: Filter) -> Q:
    text = JsonKeyText(json_field, column.path)
    op, value = flt.operator, flt.value
    if op is Operator.IS:
        if value == "null":
            return Q(IsNull(text, True))
        # Never NULL, like SQL's IS TRUE: a missing key is "not true", so not.is.true keeps it.
        kind = Coalesce(
            JsonKeyType(json_field, column.path), Value("missing"), output_field=TextField()
        )
        word = Coalesce(text, Value(""), output_field=TextField())
        return Q(Exact(kind, "boolean")) & Q(Exact(word, value))
    if op is Operator.IN:
        return Q(In(text, list(value))) if value else Q(pk__in=[])
    value = _word(flt)
    if op in _COMPARISONS:
        if JSON_NUMBER.match(value):
            return Q(
                _COMPARISONS[op](JsonKeyNumber(json_field, column.path), Value(_json_number(value)))
            )
        return Q(_COMPARISONS[op](text, value))
    return _equality_or_pattern(text, op, value)


def _json_number(text: str) -> int | float:
    """A JSON number of a filter as a bindable value: an integer past 64 bits compares as a float
    (SQLite cannot bind it, and ``int()`` of a very long one fails)."""
    if any(c in text for c in ".eE") or len(text.lstrip("-")) > len(str(INT64_MAX)):
        return float(text)
    number = int(text)
    return number if -INT64_MAX - 1 <= number <= INT64_MAX else float(number)


def _word(flt: Filter) -> str:
    """The single value of any operator but ``in`` (the parser makes a tuple for ``in`` only)."""
    if not isinstance(flt.value, str):
        raise AssertionError(f"{flt.operator.value} carries one value, not {flt.value!r}")
    return flt.value


def _column_condition(column: Column, flt: Filter) -> Q:
    lhs, op = F(column.path), flt.operator
    if op is Operator.IS:
        if flt.value == "null":
            return Q(IsNull(lhs, True))
        if column.kind is not ColumnKind.BOOLEAN:
            raise InvalidQuery(
                f"is.{flt.value} applies to boolean columns; {column.name} is {column.kind.value}",
                code=ReadCode.OPERATOR_NOT_APPLICABLE,
                field=flt.column,
            )
        wanted = flt.value == "true"
        # A null is neither true nor false, and never NULL here, like SQL's IS TRUE / IS FALSE.
        return Q(Exact(Coalesce(lhs, Value(not wanted)), wanted))
    if op is Operator.IN:
        values = [_value_parse(column, v, field=flt.column) for v in flt.value]
        return Q(In(lhs, values)) if values else Q(pk__in=[])
    if op in (Operator.LIKE, Operator.ILIKE):
        return _equality_or_pattern(lhs, op, flt.value)  # only text columns allow these
    value = _value_parse(column, _word(flt), field=flt.column)
    if op in _COMPARISONS:
        return Q(_COMPARISONS[op](lhs, value))
    return _equality_or_pattern(lhs, op, value)


def _equality_or_pattern(lhs: Any, op: Operator, value: Any) -> Q:
    if op is Operator.EQ:
        return Q(Exact(lhs, value))
    if op is Operator.NEQ:
        return ~Q(Exact(lhs, value))
    if op is Operator.LIKE:
        return Q(Like(lhs, value))
    return Q(ILike(lhs, value))


def _value_parse(column: Column, raw: str, *, field: str) -> Any:
    """The query's text as a ``column``-typed value, or 400 ``INVALID_VALUE`` naming ``field``."""
    try:
        if column.kind is ColumnKind.UUID:
            return uuid.UUID(raw)
        if column.kind is ColumnKind.INTEGER:
            # Past 64 bits no column holds it, and SQLite cannot bind it: refused, not a 500.
            if not re.fullmatch(r"-?[0-9]+", raw) or len(raw.lstrip("-").lstrip("0")) > 19:
                raise ValueError(raw)
            number = int(raw)
            if not -INT64_MAX - 1 <= number <= INT64_MAX:
                raise ValueError(raw)
            return number
        if column.kind is ColumnKind.BOOLEAN:
            if raw not in ("true", "false"):
                raise ValueError(raw)
            return raw == "true"
        if column.kind is ColumnKind.DATETIME:
            return _datetime_parse(raw)
    except ValueError:
        raise InvalidQuery(
            f"{raw!r} is not a valid {column.kind.value} for {column.name}",
            code=ReadCode.INVALID_VALUE,
            field=field,
        ) from None
    return raw


def _datetime_parse(raw: str) -> dt.datetime:
    # A date means its midnight; a time without an offset means UTC (the store keeps UTC).
    value = parse_datetime(raw)
    if value is None:
        day = parse_date(raw)
        if day is None:
            raise ValueError(raw)
        value = dt.datetime.combine(day, dt.time())
    if timezone.is_naive(value):
        value = timezone.make_aware(value, dt.UTC)
    return value
