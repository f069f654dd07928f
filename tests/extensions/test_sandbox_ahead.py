"""``Sandbox.call_ahead``: a call started early is taken by the same call, and only by it.

The same call (path, args, ctx as JSON, budget) takes the reply sent ahead; any other request
reads that reply and drops it, refusing its ``ctx.query`` (the bridge function is not run); a
``ctx.query`` of a call taken from ahead runs only when ``call`` awaits it. ``sent`` records the
requests each child received (the real ``ChildProcess.send_encoded``, observed, nothing changed):
a call taken from ahead is one request, a call that missed is two.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from extensions.child_process import ChildProcess
from extensions.sandbox import (
    AHEAD_MAX,
    Sandbox,
    SandboxScriptError,
    SandboxTimeout,
    SandboxValueTooDeep,
    SourceLocation,
)
from tests.extensions.ahead_support import LIMITS, Host, requests_recorded, sandbox_loaded

MODULE = """exports.default = {
  steps: [{ id: 'a', build: (ctx) => ({ parent: { n: ctx.n } }) }],
  total: (ctx) => ctx.items.reduce((sum, n) => sum + n, 0),
  plus: (ctx, n) => ctx.base + n,
  look: async (ctx) => ({ marker: ctx.marker, rows: await ctx.query(ctx.marker) }),
  fail: (ctx) => {
    throw new Error('no total for ' + ctx.name);
  },
  spin: () => { for (;;) {} },
  ok: () => 'ok',
};"""


@pytest.fixture
def host() -> Host:
    return Host()


@pytest.fixture
def box(host: Host) -> Iterator[Sandbox]:
    with sandbox_loaded(MODULE, host) as sandbox:
        yield sandbox


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple]]:
    """The requests sandbox children receive, in order: (op, path)."""
    return requests_recorded(monkeypatch, lambda m: (m["op"], tuple(m.get("path", ()))))


def calls(sent: list[tuple[str, tuple]]) -> list[tuple]:
    return [path for op, path in sent if op == "call"]


def call(box: Sandbox, host: Host, path: list, *args: Any, **kwargs: Any) -> Any:
    host.taking = True
    try:
        return box.call(path, list(args), **kwargs)
    finally:
        host.taking = False


def test_the_same_call_takes_the_reply_sent_ahead(box: Sandbox, sent: list) -> None:
    ctx = {"items": [1, 2, 3], "n": 7}
    plain = box.call(["total"], ctx=ctx), box.call(["plus"], [4], ctx={"base": 10})
    sent.clear()

    box.call_ahead(["total"], ctx=ctx)
    assert calls(sent) == [("total",)]  # sent at once
    assert box.call(["total"], ctx=dict(ctx)) == plain[0] == 6
    box.call_ahead(["plus"], [4], ctx={"base": 10})
    assert box.call(["plus"], [4], ctx={"base": 10}) == plain[1] == 14
    box.call_ahead(["steps", 0, "build"], ctx={"n": 1}, budget_ms=100)
    assert box.call(["steps", 0, "build"], ctx={"n": 1}, budget_ms=100) == {"parent": {"n": 1}}

    assert calls(sent) == [("total",), ("plus",), ("steps", 0, "build")]  # none sent twice


def test_a_read_of_a_call_taken_from_ahead_runs_only_when_the_call_awaits_it(
    box: Sandbox, host: Host, sent: list
) -> None:
    box.call_ahead(["look"], ctx={"marker": "customer?select=id"})
    assert host.reads == []  # the child asks; nobody answers until the call

    value = call(box, host, ["look"], ctx={"marker": "customer?select=id"})

    assert value == {"marker": "customer?select=id", "rows": [{"read": "customer?select=id"}]}
    assert host.reads == [("customer?select=id", True)]  # once, inside the call
    assert calls(sent) == [("look",)]


@pytest.mark.parametrize(
    "path, ctx, budget_ms",
    [
        (["look"], {"marker": "now", "flag": 1}, None),  # another ctx
        (["look"], {"marker": "ahead", "flag": True}, None),  # 1 and true differ in JSON
        (["look"], {"marker": "ahead", "flag": 1}, 200),  # another budget
        (["steps", 0, "build"], {"marker": "ahead", "flag": 1}, None),  # another function
    ],
    ids=["ctx", "json-type", "budget", "path"],
)
def test_another_call_drops_the_reply_sent_ahead_and_its_read_never_runs(
    box: Sandbox, host: Host, sent: list, path: list, ctx: dict, budget_ms: int | None
) -> None:
    box.call_ahead(["look"], ctx={"marker": "ahead", "flag": 1})

    value = call(box, host, path, ctx=ctx, budget_ms=budget_ms)

    if path == ["look"]:
        assert value == {"marker": ctx["marker"], "rows": [{"read": ctx["marker"]}]}
        assert host.reads == [(ctx["marker"], True)]  # this call's read; the ahead's never ran
    else:
        assert value == {"parent": {}}  # (undefined is dropped)
        assert host.reads == []
    assert calls(sent) == [("look",), tuple(path)]
    # The dropped reply is gone: the call sent ahead, made now, is made afresh.
    assert call(box, host, ["look"], ctx={"marker": "ahead", "flag": 1})["marker"] == "ahead"
    assert calls(sent) == [("look",), tuple(path), ("look",)]


def test_other_requests_answer_rightly_after_a_call_sent_ahead(box: Sandbox, host: Host) -> None:
    ahead = {"marker": "ahead"}

    box.call_ahead(["look"], ctx=ahead)
    assert box.describe(["steps", 0, "id"]) == "a"

    box.call_ahead(["look"], ctx=ahead)
    assert box.call_each(["total"], [{"items": [1, 2]}, {"items": [5]}]) == [3, 5]

    box.call_ahead(["look"], ctx=ahead)
    box.new_run(bridge={"query": lambda path: f"run b read {path}"})
    assert box.call(["look"], ctx={"marker": "b"}) == {"marker": "b", "rows": "run b read b"}

    box.call_ahead(["look"], ctx=ahead)
    loaded = box.load("exports.default = { id: 'other', look: (ctx) => 'reloaded ' + ctx.marker };")
    assert loaded.definition == {"id": "other", "look": {"$fn": True, "async": False}}
    assert box.call(["look"], ctx=ahead) == "reloaded ahead"

    assert host.reads == []  # no read sent ahead ever ran


def test_a_call_sent_ahead_that_throws_raises_as_a_plain_call(box: Sandbox, sent: list) -> None:
    with pytest.raises(SandboxScriptError) as plain:
        box.call(["fail"], ctx={"name": "x"})
    sent.clear()

    box.call_ahead(["fail"], ctx={"name": "x"})
    with pytest.raises(SandboxScriptError) as ahead:
        box.call(["fail"], ctx={"name": "x"})

    assert (ahead.value.message, ahead.value.location) == (
        plain.value.message,
        plain.value.location,
    )
    assert ahead.value.message == "Error: no total for x"
    assert ahead.value.location == SourceLocation(file="index.js", line=7, column=39)
    assert calls(sent) == [("fail",)]
    assert box.call(["ok"]) == "ok"


def test_a_call_that_cannot_go_ahead_sends_nothing_and_the_call_says_why(
    box: Sandbox, sent: list
) -> None:
    deep: dict[str, Any] = {}
    for _ in range(600):
        deep = {"d": deep}

    box.call_ahead(["total"], ctx={"items": [1], "deep": deep})
    box.call_ahead(["plus"], [deep], ctx={"base": 1})
    box.call_ahead(["total"], ctx={"items": [1], "odd": object()})
    assert sent == []

    with pytest.raises(SandboxValueTooDeep):
        box.call(["total"], ctx={"items": [1], "deep": deep})
    with pytest.raises(SandboxValueTooDeep):
        box.call(["plus"], [deep], ctx={"base": 1})
    with pytest.raises(TypeError, match="only JSON values"):
        box.call(["total"], ctx={"items": [1], "odd": object()})
    assert box.call(["total"], ctx={"items": [1]}) == 1


def test_two_calls_ahead_are_taken_in_the_order_sent(box: Sandbox, host: Host, sent: list) -> None:
    assert box.call_ahead(["look"], ctx={"marker": "first"}) is True
    assert box.call_ahead(["look"], ctx={"marker": "second"}) is True

    assert call(box, host, ["look"], ctx={"marker": "first"})["marker"] == "first"
    assert call(box, host, ["look"], ctx={"marker": "second"})["marker"] == "second"
    assert host.reads == [("first", True), ("second", True)]  # each read inside its own call
    assert calls(sent) == [("look",), ("look",)]  # both taken from ahead: none sent again


def test_calls_ahead_go_in_one_write_up_to_ahead_max_and_are_each_taken_alone(
    box: Sandbox, host: Host, sent: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[int] = []
    send_encoded = ChildProcess.send_encoded

    def counting(self: ChildProcess, encoded: str) -> None:
        requests = [line for line in encoded.splitlines() if "op" in json.loads(line)]
        if requests:  # (a bridge answer is not a request)
            writes.append(len(requests))
        send_encoded(self, encoded)

    monkeypatch.setattr(ChildProcess, "send_encoded", counting)
    markers = [f"m{n}" for n in range(AHEAD_MAX + 2)]
    many = [(["look"], [], {"marker": m}) for m in markers]

    assert box.calls_ahead(many[:2]) == 2
    assert box.calls_ahead(many[2:]) == AHEAD_MAX - 2  # only what fits; the rest not sent
    assert box.call_ahead(["look"], ctx={"marker": "over"}) is False  # AHEAD_MAX already ahead
    assert writes == [2, AHEAD_MAX - 2]  # one write each

    for marker in markers[:AHEAD_MAX]:
        assert call(box, host, ["look"], ctx={"marker": marker})["marker"] == marker
    assert host.reads == [(m, True) for m in markers[:AHEAD_MAX]]  # each inside its own call
    assert calls(sent) == [("look",)] * AHEAD_MAX  # every one taken from ahead
    assert writes == [2, AHEAD_MAX - 2]


def test_calls_ahead_stop_before_a_call_that_cannot_go(
    box: Sandbox, host: Host, sent: list
) -> None:
    many = [
        (["look"], [], {"marker": "first"}),
        (["look"], [], {"marker": "odd", "odd": object()}),  # not JSON
        (["look"], [], {"marker": "never"}),
    ]

    assert box.calls_ahead(many) == 1
    assert call(box, host, ["look"], ctx={"marker": "first"})["marker"] == "first"
    assert calls(sent) == [("look",)]


def test_a_call_that_is_not_the_first_ahead_drops_every_call_ahead(
    box: Sandbox, host: Host, sent: list
) -> None:
    box.call_ahead(["look"], ctx={"marker": "first"})
    box.call_ahead(["look"], ctx={"marker": "second"})

    # The second one's reply is not next in the pipe: both are read and dropped, their reads
    # refused, and the call is made afresh.
    assert call(box, host, ["look"], ctx={"marker": "second"})["marker"] == "second"
    assert host.reads == [("second", True)]
    assert calls(sent) == [("look",), ("look",), ("look",)]
    assert call(box, host, ["look"], ctx={"marker": "first"})["marker"] == "first"
    assert calls(sent) == [("look",), ("look",), ("look",), ("look",)]


def test_no_call_goes_ahead_while_a_call_is_in_hand(sent: list) -> None:
    def query(path: str) -> str:
        box.call_ahead(["ok"])  # from inside a call: nothing is sent
        return path

    with Sandbox(bridge={"query": query}, limits=LIMITS) as box:
        box.load(MODULE)
        assert box.call(["look"], ctx={"marker": "m"}) == {"marker": "m", "rows": "m"}
        assert box.call(["ok"]) == "ok"
    assert calls(sent) == [("look",), ("ok",)]


def test_a_call_sent_ahead_that_overruns_its_budget_times_out(box: Sandbox, sent: list) -> None:
    box.call_ahead(["spin"], budget_ms=50)
    with pytest.raises(SandboxTimeout, match="50 ms"):
        box.call(["spin"], budget_ms=50)
    assert calls(sent) == [("spin",)]
    assert box.call(["ok"]) == "ok"

    box.call_ahead(["spin"], budget_ms=50)  # dropped: the next call waits it out, then answers
    assert box.call(["ok"]) == "ok"
    assert box.call(["total"], ctx={"items": [2, 2]}) == 4


def test_close_forgets_the_call_sent_ahead(box: Sandbox, host: Host, sent: list) -> None:
    box.call_ahead(["look"], ctx={"marker": "m"})
    box.close()

    assert call(box, host, ["look"], ctx={"marker": "m"}) == {
        "marker": "m",
        "rows": [{"read": "m"}],
    }
    assert host.reads == [("m", True)]
    assert sent == [("call", ("look",)), ("modules", ()), ("call", ("look",))]  # a fresh child
