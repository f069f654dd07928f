"""How deep a JSON value crossing the sandbox boundary may nest, and the cheap ways to tell.

Imported by both ends of the sandbox's pipe: stdlib only, so the child processes may load it.
"""

from __future__ import annotations

from typing import Any

# How deep a JSON value crossing the boundary (ctx, args, results, bridge calls) may nest. Python's
# json recursion gives out near 1,000; a documented limit below it refuses by name instead.
MAX_VALUE_DEPTH = 512
_CONTAINERS = (dict, list, tuple)


def nesting_exceeds(value: Any, limit: int = MAX_VALUE_DEPTH) -> bool:
    """True when ``value`` (JSON-shaped) nests lists and dicts more than ``limit`` deep.
    Recursive, descending only into containers and stopping one level past ``limit``: a value
    deep enough to break recursion is measured too, and where the caller's own stack leaves too
    little room for ``limit`` frames the iterative walk answers instead."""
    try:
        return _exceeds(value, limit)
    except RecursionError:
        return _exceeds_iterative(value, limit)


def _exceeds(value: Any, room: int) -> bool:
    """``nesting_exceeds`` with ``room`` container levels left (this one included). A call per
    container only — the scalars that make up most of a ctx cost one ``isinstance`` — where the
    iterative walk pushed and popped every value (~5x the CPU, on every call's ctx)."""
    if isinstance(value, dict):
        children: Any = value.values()
    elif isinstance(value, list | tuple):
        children = value
    else:
        return False
    if room <= 0:
        return True
    room -= 1
    # A loop, not any(): a generator would cost a frame per level and time per value.
    for child in children:  # noqa: SIM110
        if isinstance(child, _CONTAINERS) and _exceeds(child, room):
            return True
    return False


def _exceeds_iterative(value: Any, limit: int) -> bool:
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def json_nests_within(text: bytes | str, limit: int = MAX_VALUE_DEPTH) -> bool:
    """True when the JSON ``text`` cannot nest more than ``limit`` deep: it opens no more than
    ``limit`` arrays and objects (counting brackets inside strings too, which only errs towards
    False). Every list, tuple and dict is written with its bracket, so a value whose encoding
    passes needs no walk; a ctx or result of a few KB has tens of them, and counting them costs
    a few microseconds where the walk costs tens."""
    if isinstance(text, str):
        return text.count("[") + text.count("{") <= limit
    return text.count(b"[") + text.count(b"{") <= limit


def too_deep(what: str, limit: int = MAX_VALUE_DEPTH) -> str:
    return f"{what} is nested more than {limit} deep (the sandbox's limit for values)"
