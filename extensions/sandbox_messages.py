"""The requests ``Sandbox`` sends its child, encoded once, and what makes two calls one."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from extensions.codes import ExtensionCode
from extensions.value_depth import json_nests_within, nesting_exceeds

Path_ = Sequence[str | int]


def call_message(path: Path_, args: Sequence[Any], ctx: Mapping[str, Any] | None) -> dict[str, Any]:
    """The request of a call (its budget is added when it is sent)."""
    return {
        "op": "call",
        "path": list(path),
        "args": list(args),
        "ctx": None if ctx is None else dict(ctx),
    }


def each_message(path: Path_, ctxs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The request of a ``call_each`` (its budget is added when it is sent)."""
    return {"op": "call_each", "path": list(path), "ctxs": [dict(c) for c in ctxs]}


def message_encoded(message: dict[str, Any]) -> str | None:
    """``message`` as JSON, or None when it is not JSON (or too deep for the encoder): then it is
    not sent encoded, and the call refuses it as it always did (too deep, or not JSON on
    sending). The encoder does not look for cycles: a cycle recurses until ``RecursionError``,
    which is None here and too deep for the depth check."""
    try:
        return json.dumps(message, allow_nan=False, check_circular=False)
    except (TypeError, ValueError, RecursionError):
        return None


def budgeted(encoded: str, budget: int) -> str:
    """The request of the call ``encoded`` (a JSON object) with its CPU budget added last, as
    ``json.dumps`` would write the message with ``budget_ms`` set."""
    return f'{encoded[:-1]}, "budget_ms": {budget}}}'


def too_deep_in(
    ctx: Mapping[str, Any] | None, args: Sequence[Any], encoded: str | None = None
) -> str | None:
    """What of a call's ctx and args is nested past ``MAX_VALUE_DEPTH`` (its name), or None.
    ``encoded``, the call's message as JSON, spares the walk when it has too few brackets for
    any part of it to nest that deep (``json_nests_within``)."""
    if encoded is not None and json_nests_within(encoded):
        return None
    if ctx is not None and nesting_exceeds(ctx):
        return "ctx"
    for index, arg in enumerate(args):
        if nesting_exceeds(arg):
            return f"args[{index}]"
    return None


@dataclass(frozen=True)
class Ahead:
    """A call sent ahead (``Sandbox.call_ahead``): what it was, and the CPU budget it runs under."""

    key: str
    budget: int


@dataclass
class EachAhead:
    """``call_each`` requests sent ahead in one (``Sandbox.call_each_ahead``): each part as
    encoded, the outcome of each once the reply is read, and how many were taken."""

    ahead: Ahead
    parts: list[str]
    count: int  # the calls of every part (the wall budget's multiple)
    outcomes: list[dict[str, Any]] | None = None
    taken: int = 0


def ahead_key(encoded: str, budget_ms: int | None) -> str:
    """What makes two calls the same call: the request as the child receives it (JSON: ``1``
    and ``true`` differ) — the function, its arguments, its ctx — and the budget asked for."""
    return f"{budget_ms}:{encoded}"


def ahead_dropped(name: str, args: list[Any]) -> dict[str, Any]:
    """The bridge of a call sent ahead and then not taken: its result is dropped, so its reads
    are not run; the child ends the call at once."""
    return {"abort": {"code": ExtensionCode.SANDBOX_ERROR, "message": "the call was not needed"}}


def module_id(path: str) -> str:
    """A module's id: its path inside the extension's directory, refused if it leaves it."""
    parts = [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]
    if not parts or ".." in parts or path.startswith(("/", "@")):
        raise ValueError(f"module path {path!r} must be relative to the extension's directory")
    return "/".join(parts)
