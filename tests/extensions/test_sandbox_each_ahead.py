"""``Sandbox.call_each_ahead``: a migration's next batch started early, taken part by part.

The same ``call_each`` calls (path and ctxs as JSON), in the order sent, take their values from the
one request sent ahead; any other request drops it (its ``ctx.query`` refused, never run); a
``ctx.query`` of a part taken runs only when the first part is taken. ``sent`` records the
requests each child received (the real ``ChildProcess.send_encoded``, observed, nothing changed).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from extensions.sandbox import Sandbox, SandboxTimeout
from tests.extensions.ahead_support import LIMITS, Host, requests_recorded, sandbox_loaded

MODULE = """let calls = 0;
exports.default = {
  build: (ctx) => ({ parent: { n: ctx.row.n, calls: ++calls } }),
  address: (ctx) => 'id-' + ctx.row.n + '-' + ctx.steps.a.pgRowId,
  look: async (ctx) => ({ rows: await ctx.query(ctx.row.marker) }),
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
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ops of the requests sandbox children receive, in order."""
    return requests_recorded(monkeypatch, lambda m: m["op"])


ROWS = [{"row": {"n": n}, "steps": {"a": {"pgRowId": f"r{n}"}}} for n in range(3)]
PARTS = [(["build"], ROWS), (["address"], ROWS)]


def test_the_same_calls_in_order_take_the_parts_sent_ahead(box: Sandbox, sent: list) -> None:
    plain = [box.call_each(path, ctxs) for path, ctxs in PARTS]
    sent.clear()

    assert box.call_each_ahead(PARTS) is True
    assert sent == ["call_each_many"]  # one request, sent at once
    taken = [box.call_each(path, [dict(c) for c in ctxs]) for path, ctxs in PARTS]

    assert taken == plain
    assert taken[0] == [{"parent": {"n": n, "calls": 1}} for n in range(3)]  # each call fresh
    assert taken[1] == [f"id-{n}-r{n}" for n in range(3)]
    assert sent == ["call_each_many"]  # none sent again


def test_a_read_of_a_part_runs_only_when_it_is_taken(box: Sandbox, host: Host) -> None:
    rows = [{"row": {"marker": "customer?select=id"}}]
    box.call_each_ahead([(["look"], rows)])
    assert host.reads == []  # the child asks; nobody answers until the part is taken

    host.taking = True
    assert box.call_each(["look"], rows) == [{"rows": [{"read": "customer?select=id"}]}]
    assert host.reads == [("customer?select=id", True)]


@pytest.mark.parametrize(
    "path, ctxs",
    [
        (["address"], ROWS),  # not the first part
        (["build"], ROWS[:2]),  # fewer rows
        (["build"], [{**ROWS[0], "row": {"n": True}}, *ROWS[1:]]),  # 1 and true differ in JSON
    ],
    ids=["order", "rows", "json-type"],
)
def test_another_call_drops_what_was_sent_ahead(
    box: Sandbox, host: Host, sent: list, path: list, ctxs: list
) -> None:
    box.call_each_ahead([(["look"], [{"row": {"marker": "ahead"}}]), *PARTS])

    values = box.call_each(path, ctxs)

    assert len(values) == len(ctxs)
    assert sent == ["call_each_many", "call_each"]
    assert host.reads == []  # the read sent ahead never ran
    assert box.call_each(*PARTS[0]) == [{"parent": {"n": n, "calls": 1}} for n in range(3)]
    assert sent == ["call_each_many", "call_each", "call_each"]  # made afresh


def test_other_requests_drop_what_was_sent_ahead(box: Sandbox, host: Host, sent: list) -> None:
    ahead = [(["look"], [{"row": {"marker": "ahead"}}])]

    box.call_each_ahead(ahead)
    assert box.call(["ok"]) == "ok"
    box.call_each_ahead(ahead)
    box.new_run(bridge={"query": lambda path: f"run b read {path}"})
    assert box.call_each(["look"], [{"row": {"marker": "b"}}]) == [{"rows": "run b read b"}]
    box.call_each_ahead(ahead)
    box.close()
    assert box.call(["ok"]) == "ok"

    assert host.reads == []  # no read sent ahead ever ran


def test_nothing_goes_ahead_while_a_call_is_ahead(box: Sandbox, sent: list) -> None:
    box.call_ahead(["ok"])
    assert box.call_each_ahead(PARTS) is False
    assert box.call(["ok"]) == "ok"
    assert box.call_each_ahead(PARTS) is True
    assert box.call_each_ahead(PARTS) is False  # one at a time
    assert sent == ["call", "call_each_many"]


def test_a_part_that_overruns_its_budget_times_out(box: Sandbox) -> None:
    spin = [(["spin"], [{"row": {}}]), (["build"], ROWS)]
    box.call_each_ahead(spin)
    with pytest.raises(SandboxTimeout):
        box.call_each(*spin[0])
    assert box.call_each(["build"], ROWS[:1]) == [{"parent": {"n": 0, "calls": 1}}]

    box.call_each_ahead(spin)  # dropped: the next call waits it out, then answers
    assert box.call(["ok"]) == "ok"


def test_a_new_slice_is_not_charged_for_what_the_last_one_left_ahead(box: Sandbox) -> None:
    box.slice_start()
    box.call_each_ahead([(["spin"], [{"row": {}}])])  # never taken: this slice's budget pays it

    box.slice_start()

    assert box.cpu_used_ms == 0.0  # the dropped call was waited out before the budget restarted
    assert box.call(["ok"]) == "ok"
    assert box.cpu_used_ms < LIMITS.call_budget_ms
