"""The sandbox as the engine uses it: load a module, describe it, call its functions."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extensions.sandbox import (
    BridgeError,
    LoadedModule,
    Sandbox,
    SandboxCrashed,
    SandboxError,
    SandboxLimits,
    SandboxMemoryExceeded,
    SandboxPromiseUnsettled,
    SandboxScriptError,
    SandboxStackOverflow,
    SandboxTimeout,
    SandboxViolation,
    SourceLocation,
)
from extensions.transpile import transpile

# The seed's `defineProcess` contract example, verbatim (the demo ships it; the fixture links it).
SEED_PROCESS = (
    Path(__file__).parent / "fixtures" / "processes" / "raise-po-and-bill.ts"
).read_text()

MIGRATION = """import { defineProcess } from '@turbobase/extensions/process';

export default defineProcess({
  id: 'acme:migrate-customers',
  input: { type: 'object', properties: { batch: { type: 'string' } } },
  eachRow: {
    outstanding: (input: { batch: string }) =>
      `migration_item?select=pg_row_id,legacy_id&status=eq.pending&batch=eq.${input.batch}`,
    key: 'legacy_id',
  },
  steps: [
    { id: 'create', recordType: 'customer', when: (ctx: any) => ctx.row.legacy_id !== 'skip',
      build: (ctx: any) => ({ parent: { company_name: ctx.row!.company_name } }) },
  ],
});
"""

LIMITS = SandboxLimits(call_budget_ms=300, slice_budget_ms=20_000)


@pytest.fixture
def queries() -> list[str]:
    return []


@pytest.fixture
def sandbox(queries: list[str]) -> Iterator[Sandbox]:
    def query(path: str) -> list[dict[str, Any]]:
        queries.append(path)
        return [{"terms_id": "NET30"}]

    with Sandbox(bridge={"query": query}, limits=LIMITS) as box:
        yield box


def load_ts(sandbox: Sandbox, source: str, filename: str = "process.ts") -> LoadedModule:
    return sandbox.load(transpile(source, filename=filename))


def test_seed_process_describes_itself_as_json(sandbox: Sandbox) -> None:
    loaded = load_ts(sandbox, SEED_PROCESS)

    assert loaded.kind == "process"
    assert loaded.definition["id"] == "acme:raise-po-and-bill"
    assert loaded.definition["input"]["required"] == ["vendorId", "amount"]
    assert loaded.definition["onFailure"] == "rollback"
    assert loaded.definition["steps"][0] == {
        "id": "po",
        "recordType": "purchaseOrder",
        "awaitSource": True,
        "build": {"$fn": True, "async": False},
    }
    assert loaded.definition["steps"][1]["build"] == {"$fn": True, "async": True}
    assert sandbox.describe(["steps", 1, "recordType"]) == "vendorBill"


def test_describe_keeps_schema_keys_and_marks_cycles(sandbox: Sandbox) -> None:
    loaded = sandbox.load("""const step = { id: 'a', build() { return null; } };
step.self = step;
exports.default = { input: { $schema: 'https://json-schema.org/draft/2020-12/schema',
  $defs: { x: { type: 'string' } } }, steps: [step, step], big: 10n, gone: undefined };""")

    assert loaded.definition == {
        "input": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {"x": {"type": "string"}},
        },
        "steps": [
            {"id": "a", "build": {"$fn": True, "async": False}, "self": {"$cycle": True}},
            {"id": "a", "build": {"$fn": True, "async": False}, "self": {"$cycle": True}},
        ],
        "big": {"$unsupported": "bigint"},
    }


def test_an_error_at_load_time_carries_its_line(sandbox: Sandbox) -> None:
    source = (
        "import './side.js';\nconst ready = false;\nif (!ready) throw new Error('not ready');\n"
    )
    module = transpile(source + "export default {};\n", filename="early.ts")
    side = transpile("export {};\n", filename="side.ts")
    with pytest.raises(SandboxScriptError, match="not ready") as raised:
        sandbox.load(module, siblings={"side.ts": side})
    assert raised.value.location is not None
    assert (raised.value.location.file, raised.value.location.line) == ("early.ts", 3)


def test_sync_build_returns_its_payload(sandbox: Sandbox) -> None:
    load_ts(sandbox, SEED_PROCESS)

    payload = sandbox.call(["steps", 0, "build"], ctx={"input": {"vendorId": "V7", "amount": 3}})

    assert payload == {"parent": {"entity_id": "V7"}}


def test_async_build_awaits_the_query_bridge(sandbox: Sandbox, queries: list[str]) -> None:
    load_ts(sandbox, SEED_PROCESS)
    ctx = {"input": {"vendorId": "V7", "amount": 3}, "steps": {"po": {"externalId": "PO-1"}}}

    payload = sandbox.call(["steps", 1, "build"], ctx=ctx)

    assert payload == {
        "parent": {"created_from_id": "PO-1", "entity_id": "V7", "terms_id": "NET30"}
    }
    assert queries == ["entity?select=terms_id&entity_type=eq.vendor&external_id=eq.V7"]


def test_migration_functions_take_plain_arguments(sandbox: Sandbox) -> None:
    loaded = load_ts(sandbox, MIGRATION)

    assert loaded.kind == "process"
    assert loaded.definition["eachRow"]["key"] == "legacy_id"
    assert sandbox.call(["eachRow", "outstanding"], [{"batch": "2026-10"}]) == (
        "migration_item?select=pg_row_id,legacy_id&status=eq.pending&batch=eq.2026-10"
    )
    assert sandbox.call(["steps", 0, "when"], ctx={"row": {"legacy_id": "skip"}}) is False
    assert sandbox.call(["steps", 0, "when"], ctx={"row": {"legacy_id": "L1"}}) is True


def test_hook_run_and_kinds() -> None:
    source = """import { defineHook, defineConduit } from '@turbobase/extensions';
export const conduit = defineConduit({ id: 'c' });
export default defineHook({ id: 'acme:memo', recordType: 'invoice', on: 'before_save',
  run(ctx: any) {
    return ctx.record.memo ? { ok: true } : { ok: false, code: 'MEMO', field: 'memo' };
  } });
"""
    with Sandbox(limits=LIMITS) as box:
        assert load_ts(box, source, "hook.ts").kind == "hook"
        assert box.call(["run"], ctx={"record": {}}) == {
            "ok": False,
            "code": "MEMO",
            "field": "memo",
        }
        box.load("exports.default = require('@turbobase/extensions').defineConduit({ id: 'c' });")
        assert box.describe() == {"id": "c"}
        assert box.load(
            "exports.default = require('@turbobase/extensions').defineConduit({})"
        ).kind == ("conduit")


def test_a_module_without_define_or_default_export(sandbox: Sandbox) -> None:
    assert sandbox.load("exports.default = { id: 'plain' };") == LoadedModule(None, {"id": "plain"})
    assert sandbox.load("exports.other = 1;") == LoadedModule(None, None)


def test_process_subpath_gives_only_define_process(sandbox: Sandbox) -> None:
    loaded = sandbox.load(
        "const p = require('@turbobase/extensions/process');\n"
        "exports.default = { names: Object.keys(p).sort() };"
    )
    assert loaded.definition == {"names": ["defineProcess"]}


def test_sibling_modules_are_folded_in(sandbox: Sandbox) -> None:
    entry = transpile(
        """import { defineHook } from '@turbobase/extensions';
import { requireMemo } from './shared-rule.js';
import helpers from './lib/helpers';
export default defineHook({ id: 'h', recordType: 'invoice', on: 'before_save',
  run: (ctx: any) => requireMemo(ctx.record) && helpers.twice(2) === 4 });
""",
        filename="hook.ts",
    )
    siblings = {
        "shared-rule.ts": transpile(
            "export const requireMemo = (r: any): boolean => !!r.memo;\n", filename="shared-rule.ts"
        ),
        "lib/helpers.ts": transpile(
            "export default { twice: (n: number) => n * 2 };\n", filename="lib/helpers.ts"
        ),
    }
    sandbox.load(entry, siblings=siblings)

    assert sandbox.call(["run"], ctx={"record": {"memo": "x"}}) is True
    assert sandbox.call(["run"], ctx={"record": {}}) is False


def test_a_missing_sibling_is_named(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxViolation, match=r"'\./nope\.js' \(imported from index\.js\)"):
        sandbox.load("require('./nope.js'); exports.default = {};")


def test_query_failure_reaches_the_script_as_a_rejection() -> None:
    def query(path: str) -> None:
        raise BridgeError(f"read of {path} exceeds the byte budget")

    with Sandbox(bridge={"query": query}, limits=LIMITS) as box:
        box.load(
            "exports.default = { caught: async (ctx) => {"
            " try { await ctx.query('big'); } catch (e) { return 'caught: ' + e.message; } },"
            " thrown: async (ctx) => ctx.query('big') };"
        )
        assert box.call(["caught"], ctx={}) == "caught: read of big exceeds the byte budget"
        with pytest.raises(SandboxScriptError, match="read of big exceeds the byte budget"):
            box.call(["thrown"], ctx={})


def test_an_unexpected_bridge_exception_does_not_leak_host_details() -> None:
    def query(path: str) -> None:
        raise RuntimeError("password=hunter2 at db.internal")

    with Sandbox(bridge={"query": query}, limits=LIMITS) as box:
        box.load("exports.default = { f: async (ctx) => ctx.query('x') };")
        with pytest.raises(SandboxScriptError) as raised:
            box.call(["f"], ctx={})
    assert raised.value.message == "Error: ctx.query failed"


def test_ctx_log_reaches_the_log_bridge() -> None:
    lines: list[tuple[Any, ...]] = []
    with Sandbox(bridge={"log": lambda *parts: lines.append(parts)}, limits=LIMITS) as box:
        box.load("exports.default = { f: (ctx) => { ctx.log('row', { n: 1 }); return 1; } };")
        assert box.call(["f"], ctx={}) == 1
    assert lines == [("row", {"n": 1})]


def test_only_json_crosses_the_boundary(sandbox: Sandbox) -> None:
    sandbox.load("""exports.default = {
      fn: () => () => 1, date: () => new Date(0), undef: () => undefined, nan: () => [NaN, 1],
      big: () => 10n, echo: (x) => x };""")

    assert sandbox.call(["fn"]) is None
    assert sandbox.call(["date"]) == "1970-01-01T00:00:00.000Z"
    assert sandbox.call(["undef"]) is None
    assert sandbox.call(["nan"]) == [None, 1]
    assert sandbox.call(["echo"], [{"a": [1, "b", None, True]}]) == {"a": [1, "b", None, True]}
    with pytest.raises(SandboxScriptError, match="BigInt"):
        sandbox.call(["big"])
    with pytest.raises(TypeError, match="only JSON values"):
        sandbox.call(["echo"], [object()])
    with pytest.raises(TypeError, match="only JSON values"):
        sandbox.call(["echo"], [float("nan")])


def test_script_error_carries_the_authors_line(sandbox: Sandbox) -> None:
    load_ts(
        sandbox,
        """import { defineProcess } from '@turbobase/extensions';

type Input = { vendorId: string };

export default defineProcess({
  id: 'acme:x',
  steps: [{ id: 'a', recordType: 'r', build: async (ctx: { input: Input }) => {
      const vendor: string = ctx.input.vendorId;
      throw new Error(`no vendor ${vendor}`);
  } }],
});
""",
    )
    with pytest.raises(SandboxScriptError) as raised:
        sandbox.call(["steps", 0, "build"], ctx={"input": {"vendorId": "V1"}})

    assert raised.value.message == "Error: no vendor V1"
    assert raised.value.location == SourceLocation(file="process.ts", line=9, column=17)
    assert raised.value.code == "sandbox_script_error"


def test_calling_something_that_is_not_a_function_names_it(sandbox: Sandbox) -> None:
    sandbox.load("exports.default = { steps: [{ id: 'a' }] };")
    with pytest.raises(SandboxScriptError, match=r"default\.steps\.0\.build is not a function"):
        sandbox.call(["steps", 0, "build"])
    with pytest.raises(SandboxScriptError, match=r"default\.steps\.3 is undefined"):
        sandbox.call(["steps", 3, "build"])


def test_every_call_starts_from_the_modules_initial_state(sandbox: Sandbox) -> None:
    sandbox.load("let calls = 0; exports.default = { f: () => { calls += 1; return calls; } };")

    assert [sandbox.call(["f"]) for _ in range(3)] == [1, 1, 1]
    sandbox.new_run()
    assert sandbox.call(["f"]) == 1


def test_new_run_can_change_the_bridge(sandbox: Sandbox) -> None:
    sandbox.load("exports.default = { f: async (ctx) => ctx.query('who') };")
    assert sandbox.call(["f"], ctx={}) == [{"terms_id": "NET30"}]

    sandbox.new_run(bridge={"query": lambda path: f"user-b read {path}"})

    assert sandbox.call(["f"], ctx={}) == "user-b read who"


def test_the_slice_budget_spans_calls() -> None:
    limits = SandboxLimits(call_budget_ms=200, slice_budget_ms=300)
    with Sandbox(limits=limits) as box:
        box.load("exports.default = { spin: () => { for (;;) {} }, ok: () => 1 };")
        with pytest.raises(SandboxTimeout, match="200 ms"):
            box.call(["spin"])
        messages = []
        for _ in range(5):  # each call gets only what is left of the slice, until none is
            with pytest.raises(SandboxTimeout) as raised:
                box.call(["spin"])
            messages.append(raised.value.message)
            if "spent" in raised.value.message:
                break
        assert messages[-1] == "the slice's CPU budget of 300 ms is spent"
        assert box.cpu_used_ms > 299  # "spent" is less than 1 ms left
        with pytest.raises(SandboxTimeout, match="spent"):
            box.call(["ok"])


def test_a_per_call_budget_overrides_the_default(sandbox: Sandbox) -> None:
    sandbox.load("exports.default = { spin: () => { for (;;) {} } };")
    # The refusal names the call's own budget, not the 1,000 ms default: no wall-clock assertion.
    with pytest.raises(SandboxTimeout, match="50 ms"):
        sandbox.call(["spin"], budget_ms=50)


def test_calls_work_from_any_thread(sandbox: Sandbox) -> None:
    sandbox.load("exports.default = { ok: () => 'ok', spin: () => { for (;;) {} } };")
    outcome: dict[str, Any] = {}

    def worker() -> None:
        outcome["ok"] = sandbox.call(["ok"])
        try:
            sandbox.call(["spin"])
        except SandboxTimeout as exc:
            outcome["timeout"] = exc.code

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(timeout=10)

    assert outcome == {"ok": "ok", "timeout": "sandbox_timeout"}


def test_one_caller_at_a_time(sandbox: Sandbox) -> None:
    def reenter(path: str) -> Any:
        return sandbox.call(["f"], ctx={})

    sandbox.new_run(bridge={"query": reenter})
    sandbox.load("exports.default = { f: async (ctx) => ctx.query('x') };")
    with pytest.raises(SandboxScriptError, match="already running a call"):
        sandbox.call(["f"], ctx={})


def test_a_child_killed_between_calls_is_replaced(sandbox: Sandbox) -> None:
    sandbox.load("exports.default = { f: () => 'fine' };")
    assert sandbox._child is not None
    os.kill(sandbox._child.process.pid, signal.SIGKILL)
    sandbox._child.process.wait()

    assert sandbox.call(["f"]) == "fine"


def test_a_child_dying_mid_call_is_a_crash_and_the_sandbox_recovers() -> None:
    box = Sandbox(limits=LIMITS)

    def die(path: str) -> None:
        assert box._child is not None
        os.kill(box._child.process.pid, signal.SIGKILL)

    with box:
        box.new_run(bridge={"query": die})
        box.load("exports.default = { f: async (ctx) => ctx.query('x'), ok: () => 2 };")
        with pytest.raises(SandboxCrashed) as raised:
            box.call(["f"], ctx={})
        assert raised.value.is_retryable
        assert box.call(["ok"]) == 2


def test_the_wall_clock_backstop_stops_a_child_that_does_not_answer() -> None:
    limits = SandboxLimits(call_budget_ms=100)
    with Sandbox(limits=limits) as box:
        box.load("exports.default = { f: () => 1 };")
        assert box._child is not None
        os.kill(box._child.process.pid, signal.SIGSTOP)
        with pytest.raises(SandboxTimeout, match="stopped"):  # the wall-clock backstop, by name
            box.call(["f"])
        assert box.call(["f"]) == 1


def test_error_codes_are_stable() -> None:
    assert {
        cls.code
        for cls in (
            SandboxError,
            SandboxTimeout,
            SandboxMemoryExceeded,
            SandboxStackOverflow,
            SandboxScriptError,
            SandboxViolation,
            SandboxPromiseUnsettled,
            SandboxCrashed,
        )
    } == {
        "sandbox_error",
        "sandbox_timeout",
        "sandbox_memory_exceeded",
        "sandbox_stack_overflow",
        "sandbox_script_error",
        "sandbox_violation",
        "sandbox_promise_unsettled",
        "sandbox_crashed",
    }
    assert all(issubclass(cls, SandboxError) for cls in (SandboxTimeout, SandboxViolation))


def test_nothing_runs_before_a_module_is_loaded() -> None:
    with Sandbox() as box, pytest.raises(SandboxError, match="no module is loaded"):
        box.call(["f"])
