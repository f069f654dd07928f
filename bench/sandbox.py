"""The sandbox's per-call cost: a call in a fresh scope (how every call runs) against a call in a
new QuickJS context and a call in a new process.

    python bench/sandbox.py [--seconds 2]

Every call into the sandbox starts in a fresh scope (seed 000: steps share state only through
ctx): the modules instantiated again from their factories and the globals an earlier call added
deleted, in one QuickJS context whose built-ins were frozen once. "New context per call" is the
alternative that isolation could have used: a new context with runtime.js, the lock-down and the
modules evaluated again before every call (forced here by changing the bridge's names, which are
built into a context). "New process per call" (a new ``Sandbox`` each time) is shown for scale.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a plain script

from extensions.sandbox import Sandbox  # noqa: E402
from extensions.transpile import transpile  # noqa: E402

PROCESS = """import { defineProcess } from '@turbobase/extensions';

export default defineProcess({
  id: 'acme:raise-po-and-bill',
  input: { type: 'object', properties: { vendorId: { type: 'string' } }, required: ['vendorId'] },
  steps: [
    {
      id: 'po',
      recordType: 'purchaseOrder',
      awaitSource: true,
      build: (ctx: any) => ({
        parent: { entity_id: ctx.input.vendorId, memo: `po for ${ctx.input.vendorId}` },
      }),
    },
  ],
});
"""
CTX = {"input": {"vendorId": "V-1001"}, "runId": "r-1", "steps": {}}
BRIDGE: dict[str, Callable[..., object]] = {"query": lambda path: []}


def rate(call: Callable[[], object], seconds: float) -> tuple[float, int]:
    """Calls per second of ``call`` and how many it made, measured for about ``seconds`` after a
    short warm-up."""
    for _ in range(3):
        call()
    count = 0
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        call()
        count += 1
    return count / elapsed, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    seconds = parser.parse_args().seconds
    module = transpile(PROCESS, filename="raise-po.ts")
    build: list[str | int] = ["steps", 0, "build"]
    rows: list[tuple[str, float, float | None]] = []

    # The child's CPU per call (what the child reports, from its thread clock) does not depend
    # on how busy the machine is, where the wall-clock rate does.
    with Sandbox(bridge=BRIDGE) as sandbox:
        sandbox.load(module)
        sandbox.call(build, ctx=CTX)
        before = sandbox.cpu_used_ms
        calls, count = rate(lambda: sandbox.call(build, ctx=CTX), seconds)
        rows.append(
            (
                "build() in a fresh scope (every call):",
                calls,
                (sandbox.cpu_used_ms - before) * 1000 / (count + 3),
            )
        )
        bridges = [BRIDGE, {**BRIDGE, "other": lambda: None}]

        def new_context() -> object:
            bridges.reverse()
            sandbox.new_run(bridge=bridges[0])
            return sandbox.call(build, ctx=CTX)

        sandbox.slice_start()
        calls, count = rate(new_context, seconds)
        rows.append(
            ("build() in a new context per call:", calls, sandbox.cpu_used_ms * 1000 / (count + 3))
        )

    def new_process() -> object:
        with Sandbox(bridge=BRIDGE) as box:
            box.load(module)
            return box.call(build, ctx=CTX)

    rows.append(("build() in a new process per call:", rate(new_process, seconds)[0], None))

    for name, calls, cpu_us in rows:
        cpu = f"{cpu_us:8.0f} us child CPU/call" if cpu_us is not None else ""
        print(f"{name:42} {calls:10.1f} calls/s {1e6 / calls:10.0f} us/call {cpu}")
    print(f"wall ratio fresh scope / new context:      {rows[0][1] / rows[1][1]:10.1f}x")
    fresh_cpu, context_cpu = rows[0][2], rows[1][2]
    if fresh_cpu and context_cpu:
        print(f"child CPU ratio new context / fresh scope: {context_cpu / fresh_cpu:10.1f}x")
    print(f"wall ratio fresh scope / new process:      {rows[0][1] / rows[2][1]:10.0f}x")


if __name__ == "__main__":
    main()
