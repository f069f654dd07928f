"""build() calls per second: one reused interpreter against a fresh interpreter per call.

    python bench/sandbox.py [--seconds 2]

"Reused" is how the engine runs a slice: one sandbox, one QuickJS context, many calls.
"Fresh interpreter per call" starts every call on a new QuickJS context with the module
evaluated again (``Sandbox.new_run()`` before each call), which is what isolating each call
would cost. "Fresh process per call" (a new ``Sandbox`` each time) is shown for scale.
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


def rate(call: Callable[[], object], seconds: float) -> float:
    """Calls per second of ``call``, measured for about ``seconds`` after a short warm-up."""
    for _ in range(3):
        call()
    count = 0
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        call()
        count += 1
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    seconds = parser.parse_args().seconds
    module = transpile(PROCESS, filename="raise-po.ts")
    build: list[str | int] = ["steps", 0, "build"]

    with Sandbox(bridge=BRIDGE) as sandbox:
        sandbox.load(module)
        reused = rate(lambda: sandbox.call(build, ctx=CTX), seconds)

        def fresh_interpreter() -> object:
            sandbox.new_run()
            return sandbox.call(build, ctx=CTX)

        fresh = rate(fresh_interpreter, seconds)

    def fresh_process() -> object:
        with Sandbox(bridge=BRIDGE) as box:
            box.load(module)
            return box.call(build, ctx=CTX)

    per_process = rate(fresh_process, seconds)

    print(f"build() in one reused interpreter:        {reused:10.0f} calls/s")
    print(f"build() in a fresh interpreter per call:  {fresh:10.0f} calls/s")
    print(f"build() in a fresh process per call:      {per_process:10.1f} calls/s")
    print(f"ratio reused / fresh interpreter:         {reused / fresh:10.1f}x")
    print(f"ratio reused / fresh process:             {reused / per_process:10.0f}x")


if __name__ == "__main__":
    main()
