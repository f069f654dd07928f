"""Escape and abuse, tried as an attacker would: each fails with a named error, and the same
sandbox serves the next call normally."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from extensions.sandbox import (
    Sandbox,
    SandboxError,
    SandboxLimits,
    SandboxMemoryExceeded,
    SandboxPromiseUnsettled,
    SandboxScriptError,
    SandboxStackOverflow,
    SandboxTimeout,
    SandboxViolation,
)
from extensions.transpile import transpile

LIMITS = SandboxLimits(call_budget_ms=300, slice_budget_ms=60_000)
HEALTHY = "healthy: (ctx) => ({ parent: { ok: true } })"


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(bridge={"query": lambda path: [{"path": path}]}, limits=LIMITS) as box:
        yield box


def load_body(sandbox: Sandbox, body: str, *, prelude: str = "") -> None:
    """Load a module whose default export has ``attack`` (running ``body``) and ``healthy``."""
    sandbox.load(
        f"{prelude}\nexports.default = {{ attack: async (ctx) => {{ {body} }}, {HEALTHY} }};"
    )


def assert_healthy(sandbox: Sandbox) -> None:
    assert sandbox.call(["healthy"], ctx={}) == {"parent": {"ok": True}}


def attack(
    sandbox: Sandbox, body: str, error: type[SandboxError], match: str | None = None
) -> SandboxError:
    load_body(sandbox, body)
    with pytest.raises(error, match=match) as raised:
        sandbox.call(["attack"], ctx={})
    assert type(raised.value) is error
    assert_healthy(sandbox)
    return raised.value


def test_process_env_is_not_there(sandbox: Sandbox) -> None:
    attack(sandbox, "return process.env", SandboxScriptError, "process is not defined")
    load_body(sandbox, "return [typeof process, typeof globalThis.process, typeof dukpy]")
    assert sandbox.call(["attack"], ctx={}) == ["undefined", "undefined", "undefined"]


def test_no_host_environment_value_is_visible(sandbox: Sandbox) -> None:
    os.environ["TURBOBASE_TEST_SECRET"] = "s3cr3t-value"
    try:
        with Sandbox(limits=LIMITS) as fresh:
            fresh.load(
                "exports.default = { names: () => Object.getOwnPropertyNames(globalThis),"
                " dump: () => JSON.stringify(Object.getOwnPropertyNames(globalThis)"
                ".map((n) => { try { return JSON.stringify(globalThis[n]); } catch (e) {"
                " return ''; } })) };"
            )
            names = fresh.call(["names"])
            dump = fresh.call(["dump"])
    finally:
        del os.environ["TURBOBASE_TEST_SECRET"]
    assert not {"process", "call_python", "dukpy", "os", "std"} & set(names)
    assert "s3cr3t-value" not in dump


@pytest.mark.parametrize(
    "specifier",
    [
        "fs",
        "child_process",
        "node:fs",
        "/etc/passwd",
        "../outside.js",
        "./../../etc/hosts",
        "dukpy",
        "@turbobase/extensions/../../fs",
    ],
)
def test_require_outside_the_module_map_is_a_violation(sandbox: Sandbox, specifier: str) -> None:
    error = attack(sandbox, f"return require({specifier!r})", SandboxViolation)
    assert specifier in error.message


def test_a_caught_violation_still_fails_the_call(sandbox: Sandbox) -> None:
    attack(
        sandbox,
        "try { require('child_process') } catch (e) {} return 'got away'",
        SandboxViolation,
        "child_process",
    )


@pytest.mark.parametrize(
    "code",
    [
        "return import('fs')",
        "return Function(\"return import('/etc/hostname')\")()",
        "return new Function(\"return import('fs')\")()",
    ],
)
def test_dynamic_import_is_a_violation(sandbox: Sandbox, code: str) -> None:
    attack(sandbox, code, SandboxViolation, "import")


def test_a_static_import_that_slips_past_transpile_is_refused(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxViolation, match="import"):
        sandbox.load("}); import * as fs from 'fs'; (function () {")
    sandbox.load(f"exports.default = {{ {HEALTHY} }};")
    assert_healthy(sandbox)


# dukpy re-installs call_python on the global object before every eval, so code that breaks out
# of its module wrapper while the modules are registered can close over it in a module of its
# own, which every call instantiates again; the allow-list of exported names is what must hold.
GRAB = (
    "}); const grabbed = call_python;"
    " __turbobase.register('grab.js', function (e) { e.grabbed = grabbed; }); (function () {"
)


@pytest.mark.parametrize(
    "name",
    [
        "dukpy.load_module",
        "dukpy.normalize_module",
        "dukpy.log.info",
        "os.system",
        "open",
        "",
    ],
)
def test_call_python_reaches_only_exported_names(sandbox: Sandbox, name: str) -> None:
    sandbox.load(
        f"exports.default = {{ attack: () => require('./grab.js').grabbed({name!r}, '/etc/hostname'),"
        f" {HEALTHY} }};",
        siblings={"breakout.js": GRAB},
    )
    with pytest.raises(SandboxViolation, match=f"call_python\\('{name}'\\) is not an exported"):
        sandbox.call(["attack"])
    assert_healthy(sandbox)


def test_call_python_caught_by_a_global_setter_is_gone_at_the_next_call(sandbox: Sandbox) -> None:
    # A setter planted on the global object catches the next eval's call_python; the next call's
    # fresh scope deletes the setter and the module variable it filled is a new one.
    prelude = """let captured;
Object.defineProperty(globalThis, 'call_python', {
  configurable: true, get() { return captured; }, set(v) { captured = v; } });"""
    sandbox.load(f"{prelude}\nexports.default = {{ attack: () => typeof captured, {HEALTHY} }};")
    assert sandbox.call(["attack"]) == "undefined"
    assert_healthy(sandbox)


def test_a_global_that_cannot_be_deleted_replaces_the_realm(sandbox: Sandbox) -> None:
    sandbox.load("""exports.default = {
  stick: () => { Object.defineProperty(globalThis, 'stuck', { value: 'run 1' }); return stuck; },
  read: () => typeof stuck,
};""")
    assert sandbox.call(["stick"]) == "run 1"
    assert sandbox.call(["read"]) == "undefined"


def test_a_module_that_pins_a_global_at_load_is_a_violation(sandbox: Sandbox) -> None:
    pin = "}); Object.defineProperty(globalThis, 'pinned', { value: 1 }); (function () {"
    with pytest.raises(SandboxViolation, match="cannot clear"):
        sandbox.load(f"exports.default = {{ {HEALTHY} }};", siblings={"pin.js": pin})


def test_call_python_is_gone_before_author_code_runs(sandbox: Sandbox) -> None:
    attack(
        sandbox,
        "return call_python('dukpy.load_module', '/etc/hostname')",
        SandboxScriptError,
        "call_python is not defined",
    )


def test_call_python_grabbed_into_a_global_is_gone_at_the_next_call(sandbox: Sandbox) -> None:
    breakout = "}); globalThis.grabbed = call_python; (function () {"
    sandbox.load(
        f"exports.default = {{ attack: () => typeof grabbed, {HEALTHY} }};",
        siblings={"breakout.js": breakout},
    )
    assert sandbox.call(["attack"]) == "undefined"
    assert_healthy(sandbox)


@pytest.mark.parametrize(
    "code",
    [
        "return (function () {}).constructor('return this')().call_python('os.system', 'id')",
        "return [].constructor.constructor('return process')().env",
        "return (async () => {}).constructor('return process.env')()",
        "return Object.getPrototypeOf(function* () {}).constructor('return process')().next()",
        "return this.constructor.constructor('return globalThis.dukpy.environ')()",
    ],
)
def test_function_constructor_chains_reach_nothing(sandbox: Sandbox, code: str) -> None:
    attack(sandbox, code, SandboxScriptError)


def test_function_constructor_reaches_only_the_guarded_require(sandbox: Sandbox) -> None:
    attack(sandbox, "return Function('return require')()('fs')", SandboxViolation, "'fs'")


@pytest.mark.parametrize(
    "code, what",
    [
        ("return fetch('http://169.254.169.254/')", "fetch"),
        ("return new XMLHttpRequest()", "XMLHttpRequest"),
        ("return new WebSocket('ws://x')", "WebSocket"),
        ("return setTimeout(() => 1, 0)", "setTimeout"),
        ("return setInterval(() => 1, 0)", "setInterval"),
    ],
)
def test_network_and_timers_are_violations(sandbox: Sandbox, code: str, what: str) -> None:
    attack(sandbox, code, SandboxViolation, f"{what} is not available in the sandbox")


def test_infinite_loop_in_a_call(sandbox: Sandbox) -> None:
    attack(sandbox, "for (;;) {}", SandboxTimeout, "CPU budget of 300 ms exceeded")


def test_infinite_loop_while_loading_for_deploy_validation(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxTimeout):
        sandbox.load(transpile("while (true) {}\nexport default {};\n", filename="loop.ts"))
    sandbox.load(f"exports.default = {{ {HEALTHY} }};")
    assert_healthy(sandbox)


def test_a_timeout_swallowed_inside_a_bridge_call_still_stops_the_call(sandbox: Sandbox) -> None:
    attack(
        sandbox,
        "for (;;) { try { ctx.query('spin'); } catch (e) {} }",
        SandboxTimeout,
        "CPU budget",
    )


def test_a_timeout_cannot_be_caught_by_the_script(sandbox: Sandbox) -> None:
    attack(sandbox, "for (;;) { try { for (;;) {} } catch (e) {} }", SandboxTimeout)


@pytest.mark.parametrize(
    "code",
    [
        "const spin = () => queueMicrotask(spin); spin(); return 1",
        "for (;;) await null",
        "return { toJSON() { for (;;) {} } }",
        "return { get parent() { for (;;) {} } }",
    ],
)
def test_loops_in_jobs_and_serialisation_are_stopped(sandbox: Sandbox, code: str) -> None:
    attack(sandbox, code, SandboxTimeout)


def test_catastrophic_regex(sandbox: Sandbox) -> None:
    attack(sandbox, "return /^(a+)+$/.test('a'.repeat(40) + 'b')", SandboxTimeout)


@pytest.mark.parametrize(
    "code",
    [
        "const a = []; for (;;) a.push('x'.repeat(1e6) + a.length)",
        "let s = 'xy'; for (;;) s = s + s",
        "const a = []; for (;;) a.push(new Array(1e6).fill(1.5))",
    ],
)
def test_memory_bomb(sandbox: Sandbox, code: str) -> None:
    load_body(sandbox, code)
    with pytest.raises(SandboxMemoryExceeded, match="memory limit"):
        sandbox.call(["attack"], ctx={}, budget_ms=5_000)  # the heap fills before the budget
    assert_healthy(sandbox)


def test_a_result_too_large_to_carry_back(sandbox: Sandbox) -> None:
    load_body(sandbox, "return 'x'.repeat(17e6)")
    with pytest.raises(SandboxMemoryExceeded, match="result is larger than"):
        sandbox.call(["attack"], ctx={}, budget_ms=5_000)
    assert_healthy(sandbox)


def test_runaway_recursion(sandbox: Sandbox) -> None:
    attack(sandbox, "const f = (n) => f(n + 1) + 1; return f(0)", SandboxStackOverflow)


def test_promise_that_never_settles(sandbox: Sandbox) -> None:
    attack(sandbox, "await new Promise(() => {})", SandboxPromiseUnsettled, "default.attack")


def test_nothing_one_call_writes_is_seen_by_the_next(sandbox: Sandbox) -> None:
    sandbox.load("""let moduleState = 'clean';
const tried = (write) => { try { write(); return 'written'; } catch (e) { return e.name; } };
exports.default = {
  write: () => {
    globalThis.leak = 'step 1'; moduleState = 'dirty';
    return [tried(() => { Object.prototype.polluted = 1; }),
            tried(() => { Array.prototype.push = () => 'hijacked'; }),
            tried(() => { JSON.parse = () => 'hijacked'; }),
            tried(() => { globalThis.JSON = {}; })];
  },
  read: () => [typeof leak, moduleState, ({}).polluted ?? null, [].push(1),
               JSON.parse('2')],
};""")
    assert sandbox.call(["write"]) == ["TypeError", "TypeError", "TypeError", "TypeError"]
    assert sandbox.call(["read"]) == ["undefined", "clean", None, 1, 2]


def test_the_sdk_cannot_be_replaced_by_a_sibling(sandbox: Sandbox) -> None:
    evil = (
        "}); __turbobase.register('@turbobase/extensions', function (e) {"
        " e.defineProcess = (x) => x; }); (function () {"
    )
    with pytest.raises(SandboxViolation, match="cannot be registered"):
        sandbox.load("exports.default = {};", siblings={"evil.js": evil})
    sandbox.load(f"exports.default = {{ {HEALTHY} }};")
    assert_healthy(sandbox)
