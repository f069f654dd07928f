"""The depth check on values crossing the sandbox boundary (``nesting_exceeds``): recursive for
speed, it answers exactly as the iterative walk, refuses a value deep enough to break recursion
(or circular) by name, and still answers when the caller's own stack is nearly full."""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from extensions.sandbox import Sandbox, SandboxLimits, SandboxValueTooDeep
from extensions.value_depth import (
    MAX_VALUE_DEPTH,
    _exceeds_iterative,
    json_nests_within,
    nesting_exceeds,
)

BREAKS_RECURSION = 100_000


def nested(levels: int, bottom: Any = "bottom") -> Any:
    """``bottom`` inside ``levels`` lists (``levels`` deep)."""
    value = bottom
    for _ in range(levels):
        value = [value]
    return value


def shaped(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.random()
    if depth > 10 or pick < 0.3:
        return rng.choice([1, "s", None, True, 2.5])
    if pick < 0.6:
        return [shaped(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if pick < 0.8:
        return {str(i): shaped(rng, depth + 1) for i in range(rng.randint(0, 3))}
    return tuple(shaped(rng, depth + 1) for _ in range(rng.randint(0, 2)))


def test_the_check_answers_as_the_iterative_walk() -> None:
    rng = random.Random(7)
    for _ in range(3_000):
        value = shaped(rng)
        for limit in range(13):
            assert nesting_exceeds(value, limit) == _exceeds_iterative(value, limit), (value, limit)


def test_up_to_the_limit_passes_one_more_level_is_refused() -> None:
    assert not nesting_exceeds(nested(MAX_VALUE_DEPTH))
    assert nesting_exceeds(nested(MAX_VALUE_DEPTH + 1))
    assert nesting_exceeds(nested(MAX_VALUE_DEPTH, bottom={}))  # an empty container counts
    assert not nesting_exceeds({"a": nested(MAX_VALUE_DEPTH - 1), "b": ("x", {"c": 1})})
    assert nesting_exceeds({"a": [1, 2, {"b": nested(MAX_VALUE_DEPTH - 2, bottom=[])}]})


def test_values_that_break_recursion_or_loop_are_refused() -> None:
    assert nesting_exceeds(nested(BREAKS_RECURSION))
    assert nesting_exceeds({"ok": 1, "deep": nested(BREAKS_RECURSION)})
    circular: list[Any] = []
    circular.append(circular)
    assert nesting_exceeds(circular)


def test_a_caller_deep_in_its_own_stack_gets_the_same_answer() -> None:
    def at(frames: int) -> tuple[bool, bool]:
        if frames:
            return at(frames - 1)
        return nesting_exceeds(nested(MAX_VALUE_DEPTH + 1)), nesting_exceeds(
            nested(MAX_VALUE_DEPTH)
        )

    assert at(sys.getrecursionlimit() - 100) == (True, False)


@pytest.fixture
def box() -> Iterator[Sandbox]:
    with Sandbox(limits=SandboxLimits(call_budget_ms=300)) as sandbox:
        sandbox.load("exports.default = { echo: (ctx, value) => value ?? ctx, ok: () => 'ok' };")
        yield sandbox


def test_a_call_refuses_values_too_deep_for_recursion_by_name(box: Sandbox) -> None:
    deep = nested(BREAKS_RECURSION)
    circular: dict[str, Any] = {}
    circular["self"] = circular
    with pytest.raises(SandboxValueTooDeep, match=f"ctx is nested more than {MAX_VALUE_DEPTH}"):
        box.call(["echo"], ctx={"input": deep})
    with pytest.raises(SandboxValueTooDeep, match=r"args\[1\] is nested more than"):
        box.call(["echo"], [None, deep], ctx={})
    with pytest.raises(SandboxValueTooDeep, match="ctx is nested more than"):
        box.call(["echo"], ctx={"input": circular})

    # Sent ahead, they are not sent; the call itself refuses them the same way.
    assert box.call_ahead(["echo"], ctx={"input": deep}) is False
    assert box.call_ahead(["echo"], ctx={"input": circular}) is False
    with pytest.raises(SandboxValueTooDeep, match="ctx is nested more than"):
        box.call(["echo"], ctx={"input": circular})
    assert box.call(["echo"], [nested(MAX_VALUE_DEPTH - 1)]) == nested(MAX_VALUE_DEPTH - 1)
    assert box.call(["ok"]) == "ok"


def test_a_call_taken_from_ahead_answers_as_the_call(box: Sandbox) -> None:
    ctx = {"n": 1, "items": [1, 2, {"a": True}]}
    assert box.call_ahead(["echo"], ctx=ctx) is True
    assert box.call(["echo"], ctx=ctx) == ctx
    box.call_ahead(["echo"], ctx=ctx)
    assert box.call(["echo"], ctx={**ctx, "n": True}) == {**ctx, "n": True}  # not the same call


def test_the_bracket_count_spares_the_walk_only_when_it_proves_the_value_shallow() -> None:
    assert json_nests_within('{"a": [1, {"b": []}]}')
    assert json_nests_within(b"[" * MAX_VALUE_DEPTH + b"]" * MAX_VALUE_DEPTH)
    assert not json_nests_within("[" * (MAX_VALUE_DEPTH + 1) + "]" * (MAX_VALUE_DEPTH + 1))
    # Brackets in strings or side by side count too: not proof, so the walk answers.
    assert not json_nests_within(json.dumps({"s": "[" * 600}))
    assert not json_nests_within(json.dumps([[1]] * 600))


def test_wide_values_and_brackets_in_strings_still_cross(box: Sandbox) -> None:
    wide = {"rows": [[i] for i in range(600)], "text": "{[" * 600}
    assert box.call(["echo"], ctx=wide) == wide
    assert box.call(["echo"], [wide], ctx={}) == wide
    box.call_ahead(["echo"], ctx=wide)
    assert box._ahead is not None
    assert box.call(["echo"], ctx=wide) == wide
    with pytest.raises(SandboxValueTooDeep, match="ctx is nested more than"):
        box.call(["echo"], ctx={**wide, "deep": nested(MAX_VALUE_DEPTH + 1)})
