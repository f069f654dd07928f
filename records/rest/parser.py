"""PostgREST path-and-query → a typed ``RestQuery``. Pure syntax: no database, no catalog.

Understood: ``<resource>?select=a,alias:b,*&col=[not.]op.value&order=a.desc.nullslast,b``
``&limit=N&offset=N``
with ``op`` one of eq, neq, gt, gte, lt, lte, like, ilike (``*`` is the wildcard), is (null, true,
false) and in (``in.(a,b,"c,d")``). The same column may be filtered more than once; filters AND.
Whether a column exists is the resource's business (``records.rest.resources``); this module only
checks that a name could be one. Query strings are decoded as forms (``+`` is a space), like
PostgREST. Everything else PostgREST offers (embedding, casts, ``or=``/``and=``, ``rpc/``) is
refused by name rather than misread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import parse_qsl

from kernel.text import text_problem
from records.rest.codes import ReadCode
from records.rest.errors import InvalidQuery, RpcNotSupported

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESERVED_PARAMETERS = ("select", "order", "limit", "offset")
UNSUPPORTED_PARAMETERS = ("or", "and", "not", "columns", "on_conflict")


class Operator(StrEnum):
    EQ = "eq"
    NEQ = "neq"
    GT = "gt"
    GTE = "gte"
    LT = "lt"
    LTE = "lte"
    LIKE = "like"
    ILIKE = "ilike"
    IS = "is"
    IN = "in"


IS_VALUES = ("null", "true", "false")
COUNT_MAX = 2**31 - 1  # the largest limit and offset a read takes (README: limits)


@dataclass(frozen=True)
class SelectItem:
    """One output column: ``column`` read, written under ``alias``; ``*`` is ``is_star``."""

    column: str
    alias: str
    is_star: bool = False


@dataclass(frozen=True)
class Filter:
    """``column=[not.]operator.value``; ``value`` is a tuple for ``in``, a word for ``is``."""

    column: str
    operator: Operator
    value: str | tuple[str, ...]
    is_negated: bool = False


@dataclass(frozen=True)
class OrderTerm:
    column: str
    is_descending: bool = False
    nulls_first: bool | None = None  # None: PostgreSQL's default (last ascending, first descending)


@dataclass(frozen=True)
class RestQuery:
    resource: str
    select: tuple[SelectItem, ...] | None = None  # None: the resource's default columns
    filters: tuple[Filter, ...] = ()
    order: tuple[OrderTerm, ...] = ()
    limit: int | None = None
    offset: int = 0


def _invalid(code: ReadCode, field: str | None, message: str) -> InvalidQuery:
    return InvalidQuery(message, code=code, field=field)


def query_parse(path_and_query: str) -> RestQuery:
    """Parse ``resource?query`` (an optional leading ``/`` is ignored)."""
    path, _, query_string = path_and_query.partition("?")
    return query_parse_parts(path=path, query_string=query_string)


def query_parse_parts(*, path: str, query_string: str) -> RestQuery:
    """Parse a path (already percent-decoded) and a raw query string."""
    resource = _resource_parse(path)
    params = parse_qsl(query_string, keep_blank_values=True)
    for name, value in params:
        problem = text_problem(name + value)
        if problem is not None:  # a NUL reached the database driver and failed there (500)
            raise _invalid(ReadCode.INVALID_VALUE, name, f"{name}={value!r} {problem}")
    seen: set[str] = set()
    select, limit, offset = None, None, 0
    order: tuple[OrderTerm, ...] = ()
    filters: list[Filter] = []
    for name, value in params:
        if name in RESERVED_PARAMETERS:
            if name in seen:
                raise _invalid(
                    ReadCode.DUPLICATE_PARAMETER, name, f"{name} is given more than once"
                )
            seen.add(name)
        if name == "select":
            select = _select_parse(value)
        elif name == "order":
            order = _order_parse(value)
        elif name == "limit":
            limit = _count_parse(name, value, ReadCode.INVALID_LIMIT)
        elif name == "offset":
            offset = _count_parse(name, value, ReadCode.INVALID_OFFSET)
        elif name in UNSUPPORTED_PARAMETERS:
            raise _invalid(
                ReadCode.UNSUPPORTED_PARAMETER,
                name,
                f"{name}= is not supported by this read; separate filter parameters AND together",
            )
        else:
            filters.append(_filter_parse(name, value))
    return RestQuery(
        resource=resource,
        select=select,
        filters=tuple(filters),
        order=order,
        limit=limit,
        offset=offset,
    )


def _resource_parse(path: str) -> str:
    path = path.strip("/")
    head = path.split("/", 1)[0]
    if head == "rpc":
        raise RpcNotSupported(
            "rpc/ paths name stored procedures, which this read never calls; "
            "read a resource instead",
            field="path",
        )
    if not NAME.match(path):
        raise _invalid(
            ReadCode.INVALID_PATH, "path", f"the path must be one resource name, not {path!r}"
        )
    return path


def _column_name(name: str, field: str) -> str:
    if not NAME.match(name):
        raise _invalid(ReadCode.UNKNOWN_COLUMN, field, f"{name!r} is not a column name")
    return name


def _select_parse(value: str) -> tuple[SelectItem, ...]:
    items: list[SelectItem] = []
    for raw in value.split(","):
        raw = raw.strip()
        if raw == "*":
            items.append(SelectItem(column="*", alias="*", is_star=True))
            continue
        if "(" in raw or ")" in raw:
            raise _invalid(
                ReadCode.INVALID_SELECT, "select", f"embedded resources are not supported: {raw!r}"
            )
        if "::" in raw or "->" in raw:
            raise _invalid(
                ReadCode.INVALID_SELECT,
                "select",
                f"casts and JSON paths are not supported in select: {raw!r}",
            )
        alias, _, column = raw.rpartition(":")
        if not raw:
            raise _invalid(ReadCode.INVALID_SELECT, "select", "select names an empty column")
        column = _column_name(column, "select")
        alias = _column_name(alias, "select") if alias else column
        items.append(SelectItem(column=column, alias=alias))
    return tuple(items)


def _order_parse(value: str) -> tuple[OrderTerm, ...]:
    terms: list[OrderTerm] = []
    for raw in value.split(","):
        column, *modifiers = raw.strip().split(".")
        column = _column_name(column, "order")
        is_descending, nulls_first = False, None
        direction_seen = nulls_seen = False
        for modifier in modifiers:
            if modifier in ("asc", "desc") and not direction_seen:
                is_descending, direction_seen = modifier == "desc", True
            elif modifier in ("nullsfirst", "nullslast") and not nulls_seen:
                nulls_first, nulls_seen = modifier == "nullsfirst", True
            else:
                raise _invalid(
                    ReadCode.INVALID_ORDER,
                    "order",
                    f"{raw!r}: order takes column[.asc|.desc][.nullsfirst|.nullslast]",
                )
        terms.append(OrderTerm(column=column, is_descending=is_descending, nulls_first=nulls_first))
    return tuple(terms)


def _count_parse(name: str, value: str, code: ReadCode) -> int:
    if not value.isascii() or not value.isdigit():
        raise _invalid(code, name, f"{name} must be a non-negative integer, not {value!r}")
    # Bounded so limit + offset always fits the databases' 64-bit LIMIT/OFFSET.
    digits = value.lstrip("0") or "0"  # int() of a long enough string fails (and is slow)
    if len(digits) > len(str(COUNT_MAX)) or int(digits) > COUNT_MAX:
        raise _invalid(code, name, f"{name} must be at most {COUNT_MAX}, not {value}")
    return int(value)


def _filter_parse(name: str, value: str) -> Filter:
    column = _column_name(name, name)
    is_negated = value.startswith("not.")
    rest = value[4:] if is_negated else value
    word, dot, operand = rest.partition(".")
    try:
        operator = Operator(word)
    except ValueError:
        raise _invalid(
            ReadCode.UNKNOWN_OPERATOR,
            name,
            f"{word!r} is not an operator; use one of "
            f"{', '.join(o.value for o in Operator)}, optionally after not.",
        ) from None
    if not dot:
        raise _invalid(ReadCode.INVALID_VALUE, name, f"{name}={value}: expected {word}.<value>")
    if operator is Operator.IS:
        if operand.lower() not in IS_VALUES:
            raise _invalid(
                ReadCode.INVALID_VALUE, name, f"is takes null, true or false, not {operand!r}"
            )
        return Filter(column, operator, operand.lower(), is_negated)
    if operator is Operator.IN:
        return Filter(column, operator, _list_parse(name, operand), is_negated)
    if operator in (Operator.LIKE, Operator.ILIKE) and _ends_in_lone_escape(operand):
        # PostgreSQL refuses such a pattern at run time ("must not end with escape character").
        raise _invalid(
            ReadCode.INVALID_VALUE,
            name,
            f"{word} pattern {operand!r} ends with a lone \\; write \\\\ for a backslash",
        )
    return Filter(column, operator, operand, is_negated)


def _ends_in_lone_escape(pattern: str) -> bool:
    trailing = len(pattern) - len(pattern.rstrip("\\"))
    return trailing % 2 == 1


def _list_parse(name: str, operand: str) -> tuple[str, ...]:
    """``(a,b,"c,d")``: comma-separated; double quotes keep commas, ``\\`` escapes inside them."""
    if len(operand) < 2 or operand[0] != "(" or operand[-1] != ")":
        raise _invalid(
            ReadCode.INVALID_VALUE,
            name,
            f"in takes a list in parentheses, like in.(a,b), not {operand!r}",
        )
    body = operand[1:-1]
    if body == "":
        return ()
    items: list[str] = []
    current: list[str] = []
    is_quoted = was_quoted = False
    i = 0
    while i < len(body):
        char = body[i]
        if is_quoted:
            if char == "\\" and i + 1 < len(body):
                current.append(body[i + 1])
                i += 1
            elif char == '"':
                is_quoted = False
            else:
                current.append(char)
        elif char == '"' and not current and not was_quoted:
            is_quoted = was_quoted = True
        elif char == ",":
            items.append("".join(current))
            current, was_quoted = [], False
        else:
            current.append(char)
        i += 1
    if is_quoted:
        raise _invalid(ReadCode.INVALID_VALUE, name, f"unclosed quote in {operand!r}")
    items.append("".join(current))
    return tuple(items)
