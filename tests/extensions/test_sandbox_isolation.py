"""Seed 000: steps share state only through ctx. Every call into the sandbox starts in a fresh
scope; values nested past the limit are refused by name without harming the child; the only host
clock is Date.now(); a step's time in ctx.query counts toward its wall budget."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from extensions.sandbox import (
    Sandbox,
    SandboxLimits,
    SandboxTimeBudgetExceeded,
    SandboxValueTooDeep,
    SandboxViolation,
)
from extensions.value_depth import MAX_VALUE_DEPTH
from guardrails.settings import setting_set
from tests.conftest import cli
from tests.processes.engine_support import deploy, invoke, ledger, pump

DEEP = 1_200

# A chain whose steps lean on what an earlier step left behind, in every place JavaScript has:
# a module variable, a global and a built-in's prototype.
LEANING = """import { defineProcess } from '@turbobase/extensions';

let counter = 0;
const tried = (write) => { try { write(); return 'written'; } catch (e) { return e.name; } };

export default defineProcess({
  id: 't:leaning',
  input: { type: 'object' },
  steps: [
    { id: 'first', recordType: 'legacy_customer', build: (ctx) => {
      counter += 1;
      globalThis.stash = 'from first';
      const proto = tried(() => { Object.prototype.stash = 'from first'; });
      return { parent: { n: counter, note: proto } };
    } },
    { id: 'second', recordType: 'legacy_customer', build: (ctx) => ({ parent: {
      n: counter,
      status: typeof stash,
      tag: String(({} as any).stash ?? 'none'),
      custom: { earlier: Object.keys(ctx.steps) },
    } }) },
  ],
});
"""


def nested(depth: int) -> object:
    value: object = "bottom"
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(bridge={"query": lambda path: [{"path": path}]}) as box:
        yield box


def test_calls_share_nothing_and_a_resumed_run_sees_what_a_continuing_one_sees() -> None:
    source = """let calls = 0;
exports.default = {
  step: () => { calls += 1; globalThis.seen = (globalThis.seen ?? 0) + 1; return [calls, seen]; },
};"""
    with Sandbox() as continuing:
        continuing.load(source)
        in_one_interpreter = [continuing.call(["step"]) for _ in range(3)]
    after_a_crash = []
    for _ in range(3):  # a resumed run starts in a new child process each time
        with Sandbox() as resumed:
            resumed.load(source)
            after_a_crash.append(resumed.call(["step"]))

    assert in_one_interpreter == after_a_crash == [[1, 1], [1, 1], [1, 1]]


def test_calls_made_together_share_nothing_and_stop_at_the_first_that_did_not_settle(
    sandbox: Sandbox,
) -> None:
    sandbox.load("""let calls = 0;
exports.default = {
  build: (ctx) => {
    calls += 1;
    globalThis.seen = (globalThis.seen ?? 0) + 1;
    if (ctx.row === 'throws') throw new Error('no');
    if (ctx.row === 'waits') return ctx.query('x').then(() => [calls, seen, ctx.row]);
    return [calls, seen, ctx.row];
  },
};""")
    rows = ["a", "b", "c"]
    assert sandbox.call_each(["build"], [{"row": r} for r in rows]) == [[1, 1, r] for r in rows]
    # A failure ends the list before it: the caller makes that call alone, and the rest.
    assert sandbox.call_each(["build"], [{"row": r} for r in ["a", "throws", "c"]]) == [[1, 1, "a"]]
    # A Promise ends it: it settles once the eval is over, when the promise jobs of every call
    # before it run too, so a later call that waits is made alone; a first one is as alone.
    assert sandbox.call_each(["build"], [{"row": r} for r in ["a", "waits", "c"]]) == [[1, 1, "a"]]
    assert sandbox.call_each(["build"], [{"row": r} for r in ["waits", "c"]]) == [[1, 1, "waits"]]
    assert sandbox.call_each(["build"], []) == []


@pytest.mark.django_db(transaction=True)
def test_a_chain_step_sees_only_ctx_of_what_the_step_before_it_did(admin_user, alice):
    from records.models import Record

    deploy(LEANING, by=admin_user)
    run = invoke("t:leaning", {}, alice)
    pump()
    run.refresh_from_db()

    assert run.state == "committed", run.reason
    first, second = (
        Record.reads.get(pk=run.ledger.get(step_id=step).pg_row_id).fields
        for step in ("first", "second")
    )
    assert first == {"n": 1, "note": "TypeError"}  # built-ins are frozen
    assert second == {
        "n": 0,
        "status": "undefined",
        "tag": "none",
        "custom": {"earlier": ["first"]},
    }


def test_built_ins_are_frozen_but_own_objects_can_override_their_methods(sandbox: Sandbox) -> None:
    sandbox.load("""class Refused extends Error {
  constructor(message) { super(message); this.name = 'Refused'; }
}
exports.default = {
  f: () => {
    const money = { amount: 5 };
    money.toString = () => 'EUR 5';
    return [String(new Refused('no')), String(money), Object.isFrozen(Array.prototype),
            Object.isFrozen(Object.getPrototypeOf([][Symbol.iterator]()))];
  },
};""")
    assert sandbox.call(["f"]) == ["Refused: no", "EUR 5", True, True]


@pytest.mark.parametrize(
    "code, what",
    [
        ("return eval('1 + 1')", "eval is not available"),
        ("return (0, globalThis.eval)('let kept = 1')", "eval is not available"),
        ("return new FinalizationRegistry(() => {})", "FinalizationRegistry is not available"),
    ],
)
def test_what_could_outlive_a_call_is_refused(sandbox: Sandbox, code: str, what: str) -> None:
    sandbox.load(f"exports.default = {{ f: () => {{ {code}; }} }};")
    with pytest.raises(SandboxViolation, match=what):
        sandbox.call(["f"])


def test_the_only_host_clock_is_date_now(sandbox: Sandbox) -> None:
    sandbox.load("""exports.default = { f: () => {
  const before = Date.now();
  return [performance.timeOrigin, performance.now(), before, Date.now()];
} };""")
    time_origin, since_origin, before, after = sandbox.call(["f"])

    # timeOrigin is the epoch time the context started (not the host's monotonic uptime), and
    # now() is Date.now() counted from it: whole milliseconds, no finer clock.
    assert time_origin <= before <= after
    assert after - time_origin < 600_000
    assert since_origin == int(since_origin)
    assert before - time_origin <= since_origin <= after - time_origin


def test_deep_values_are_refused_by_name_and_the_child_carries_on(sandbox: Sandbox, capfd) -> None:
    sandbox.load("""exports.default = {
  echo: (ctx, value) => value ?? ctx,
  make: (ctx, depth) => { let v = 'bottom'; for (let i = 1; i < depth; i++) v = [v]; return v; },
  ask: async (ctx, depth) => {
    let v = 'bottom'; for (let i = 1; i < depth; i++) v = [v];
    try { await ctx.query(v); return 'answered'; } catch (e) { return e.message; }
  },
  ok: () => 'ok',
};""")
    sandbox.call(["ok"])
    pid = sandbox._child.process.pid

    with pytest.raises(
        SandboxValueTooDeep, match=f"ctx is nested more than {MAX_VALUE_DEPTH} deep"
    ):
        sandbox.call(["echo"], ctx={"input": nested(DEEP)})
    with pytest.raises(SandboxValueTooDeep, match=r"args\[1\] is nested more than"):
        sandbox.call(["echo"], [None, nested(DEEP)], ctx={})
    with pytest.raises(SandboxValueTooDeep, match=r"the value default\.make returned is nested"):
        sandbox.call(["make"], [DEEP], ctx={})
    assert sandbox.call(["ask"], [DEEP], ctx={}) == (
        f"the arguments of ctx.query is nested more than {MAX_VALUE_DEPTH} deep "
        "(the sandbox's limit for values)"
    )

    # Up to the limit everything crosses; the child that refused the rest is the same process.
    assert sandbox.call(["make"], [MAX_VALUE_DEPTH], ctx={}) == nested(MAX_VALUE_DEPTH)
    assert sandbox.call(["ok"]) == "ok"
    assert sandbox._child.process.pid == pid
    assert "Traceback" not in capfd.readouterr().err


def test_a_deep_answer_from_the_bridge_is_refused_by_name(capfd) -> None:
    with Sandbox(bridge={"query": lambda path: nested(DEEP)}) as box:
        box.load("""exports.default = {
  f: async (ctx) => { try { await ctx.query('x'); return 'answered'; } catch (e) { return e.message; } },
};""")
        assert box.call(["f"], ctx={}) == (
            f"the value ctx.query answered is nested more than {MAX_VALUE_DEPTH} deep "
            "(the sandbox's limit for values)"
        )
    assert "Traceback" not in capfd.readouterr().err


def test_a_deep_default_export_is_refused_at_load(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxValueTooDeep, match="the default export is nested"):
        sandbox.load(
            f"let v = 'bottom'; for (let i = 1; i < {DEEP}; i++) v = [v];"
            " exports.default = { id: 'x', deep: v };"
        )


def test_a_loop_of_reads_stops_at_the_wall_budget_by_name() -> None:
    reads: list[str] = []

    def slow_query(path: str) -> list[object]:
        reads.append(path)
        time.sleep(0.05)
        return []

    limits = SandboxLimits(call_budget_ms=1_000, wall_budget_ms=300)
    with Sandbox(bridge={"query": slow_query}, limits=limits) as box:
        box.load("""exports.default = {
  loop: async (ctx) => { for (;;) { try { await ctx.query('x'); } catch (e) {} } },
  ok: () => 'ok',
};""")
        with pytest.raises(SandboxTimeBudgetExceeded, match="wall budget of 300 ms") as raised:
            box.call(["loop"], ctx={})
        assert raised.value.code == "sandbox_time_budget_exceeded"
        assert box.call(["ok"]) == "ok"
    # Each read took 50 ms of host time and none of the script's CPU: only the wall budget
    # could stop the loop, after a handful of reads rather than when the CPU budget ran out.
    assert 1 <= len(reads) <= 7


def test_a_bridge_sees_what_is_left_of_the_wall_budget() -> None:
    remaining: list[float] = []
    limits = SandboxLimits(wall_budget_ms=5_000)
    with Sandbox(limits=limits) as box:
        box.new_run(bridge={"query": lambda path: remaining.append(box.wall_remaining_ms())})
        box.load(
            "exports.default = { f: async (ctx) => { await ctx.query('a'); await ctx.query('b'); } };"
        )
        box.call(["f"], ctx={})
        assert box.wall_remaining_ms() == 5_000  # outside a call: the whole budget

    assert 0 < remaining[1] <= remaining[0] < 5_000


@pytest.mark.django_db(transaction=True)
def test_a_step_reading_in_a_loop_is_stopped_by_the_step_time_budget(admin_user, alice):
    setting_set("processes.step_time_budget_ms", 400)
    deploy(
        """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:reader',
  input: { type: 'object' },
  steps: [{ id: 'loop', recordType: 'legacy_customer', build: async (ctx) => {
    for (;;) { try { await ctx.query('customer?select=pg_row_id'); } catch (e) {} }
  } }],
});
""",
        by=admin_user,
    )
    run = invoke("t:reader", {}, alice)
    pump()
    run.refresh_from_db()

    assert run.state == "failed"
    assert ledger(run) == [("loop", "failed", "sandbox_time_budget_exceeded")]
    row = run.ledger.get(step_id="loop")
    assert "wall budget of 400 ms" in row.refusal_message


HOOK = """import { defineHook } from '@turbobase/extensions';
export default defineHook({ id: 'acme:deep', recordType: 'customer', on: 'before_save',
  run(ctx) {
    if (ctx.record.parent.echo) { let v = 'bottom'; for (let i = 1; i < 1200; i++) v = [v]; return v; }
    return undefined;
  } });
"""


def test_ext_test_names_deep_values_without_a_traceback(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TURBOBASE_URL", raising=False)
    (tmp_path / "hook.ts").write_text(HOOK)
    samples = tmp_path / "samples.json"

    samples.write_text(f'{{"parent": {{"deep": {"[" * 800}{"]" * 800}}}}}')
    code, out, err = cli(capfd, "ext", "test", "hook.ts", "--sample", f"@{samples}")
    assert code == 1
    assert out.startswith(
        f"failed: sandbox_value_too_deep: ctx is nested more than {MAX_VALUE_DEPTH} deep"
    )
    assert "Traceback" not in err

    code, out, err = cli(capfd, "ext", "test", "hook.ts", "--sample", '{"parent": {"echo": true}}')
    assert code == 1
    assert out.startswith(
        "failed: sandbox_value_too_deep: the value default.run returned is nested"
    )
    assert "Traceback" not in err

    samples.write_text("[" * DEEP + "]" * DEEP)
    code, out, err = cli(capfd, "ext", "test", "hook.ts", "--sample", f"@{samples}")
    assert code != 0
    assert "--sample is nested too deeply to read" in err
    assert "Traceback" not in out + err


# What a call may do to the global object itself: the next call must start from one no earlier
# call could change (issue: one user's hook froze the global and every later call failed).
TAINTS = [
    "Object.preventExtensions(globalThis)",
    "Object.seal(globalThis)",
    "Object.freeze(globalThis)",
    "Object.defineProperty(globalThis, 'dukpy', { get() { return 'planted'; }, set(v) {} })",
    "Object.defineProperty(globalThis, 'call_python', { get() { throw new Error('trap'); } })",
    "Object.setPrototypeOf(globalThis, null)",
]


@pytest.mark.parametrize("taint", TAINTS)
def test_a_call_that_changes_the_global_object_leaves_the_next_call_clean(
    sandbox: Sandbox, taint: str
) -> None:
    sandbox.load(f"""exports.default = {{
  taint: () => {{ try {{ {taint}; }} catch (e) {{ return e.name; }} return 'done'; }},
  look: (ctx) => [Object.isExtensible(globalThis), Object.isSealed(globalThis),
                  typeof Object.getOwnPropertyDescriptor(globalThis, 'dukpy')?.get, ctx.n],
}};""")
    clean = sandbox.call(["look"], ctx={"n": 0})
    sandbox.call(["taint"])
    assert [sandbox.call(["look"], ctx={"n": n}) for n in (1, 2)] == [
        [*clean[:3], 1],
        [*clean[:3], 2],
    ]
    sandbox.call(["taint"])
    assert sandbox.call_each(["look"], [{"n": 3}, {"n": 4}]) == [[*clean[:3], 3], [*clean[:3], 4]]
