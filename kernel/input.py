"""What a request body may carry: the checks ``kernel.parsers`` runs on every parsed body.

- JSON nested deeper than ``JSON_MAX_DEPTH`` is refused (400 ``INVALID_JSON``): deeper bodies
  made Python recurse past its limit somewhere between parsing and the database;
- a number decoded as infinity (``1e999``) is refused with 400 ``INVALID_NUMBER`` naming it;
- every string in the body — object keys included — must be storable text (``kernel.text``):
  a NUL or a lone surrogate is refused with 400 ``INVALID_TEXT`` naming where it is
  (``parent.company_name``, ``lines[2].memo``), before any view reads the body, so record
  values, process input, idempotency keys and sign-in credentials are all covered.

The body is walked with an explicit stack, never recursively, so the check cannot itself
overflow.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from rest_framework.exceptions import ParseError

from kernel.codes import KernelCode
from kernel.errors import InvalidRequest
from kernel.text import text_problem

# Documented in README ("Limits on input and output").
JSON_MAX_DEPTH = 64


class InvalidText(InvalidRequest):
    """A string in the request cannot be stored as text."""

    code = KernelCode.INVALID_TEXT


class InvalidNumber(InvalidRequest):
    """A number in the request is out of the range JSON can store."""

    code = KernelCode.INVALID_NUMBER


def _child_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def data_check(data: Any, *, path: str = "") -> None:
    """Refuse a parsed body nested past ``JSON_MAX_DEPTH`` or holding unstorable text."""
    stack: list[tuple[Any, str, int]] = [(data, path, 1)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, str):
            _text_check(value, path or "body")
            continue
        if isinstance(value, float) and not math.isfinite(value):
            # 1e999 decodes to infinity, which no JSON column can store.
            field = path or "body"
            raise InvalidNumber(f"{field} is a number out of range (±1.8e308)", field=field)
        if isinstance(value, Mapping):
            children = []
            for key in value:
                key_path = _child_path(path, str(key))
                _text_check(str(key), key_path, what="key")
                children.append((value[key], key_path))
        elif isinstance(value, list | tuple):
            children = [(item, _child_path(path, index)) for index, item in enumerate(value)]
        else:
            continue
        if children and depth >= JSON_MAX_DEPTH:
            # The same words as when the decoder itself gives up (kernel.parsers).
            raise ParseError(
                f"JSON parse error - the body is nested deeper than {JSON_MAX_DEPTH} levels"
            )
        stack.extend((child, child_path, depth + 1) for child, child_path in children)


def form_check(lists: Iterable[tuple[str, list[Any]]]) -> None:
    """Refuse form fields (``QueryDict.lists()``) whose name or any value is unstorable text."""
    for name, values in lists:
        _text_check(name, name, what="name")
        for value in values:
            data_check(value, path=name)


def _text_check(value: str, field: str, *, what: str = "value") -> None:
    problem = text_problem(value)
    if problem is not None:
        raise InvalidText(f"the {what} of {field} {problem}", field=field)
