"""Engine bench: per-step overhead of a chain of N create steps against N bare boundary creates.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/turbobase .venv/bin/python bench/engine.py [--steps 20 --runs 10]

Both sides write the same app-owned records as the same user, in the same run, interleaved. The
engine side invokes the process and performs its delivery in this process (what a lane worker
does: claim, sandbox, when/build, boundary write + ledger row per step). Target: at most 2x.
"""

from __future__ import annotations

import argparse
import sys

# support sets up Django first: the imports below need it.
from support import bench_database, ratio_line, timed

# isort: split

from django.contrib.auth import get_user_model  # noqa: E402

from extensions.deploy import extension_deploy  # noqa: E402
from processes.engine.runner import run_deliver  # noqa: E402
from processes.invoke import run_invoke  # noqa: E402
from processes.models import ProcessRun  # noqa: E402
from records.boundary import record_create  # noqa: E402
from records.trail import Actor  # noqa: E402

TARGET = 2.0


def chain_source(steps: int) -> str:
    body = ",\n".join(
        f"    {{ id: 's{n}', recordType: 'legacy_customer',"
        f" build: (ctx) => ({{ parent: {{ n: {n}, run: ctx.runId }} }}) }}"
        for n in range(steps)
    )
    return (
        "import { defineProcess } from '@turbobase/extensions';\n"
        "export default defineProcess({\n  id: 'bench:chain',\n  input: { type: 'object' },\n"
        f"  steps: [\n{body}\n  ],\n}});\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    with bench_database() as vendor:
        user = get_user_model().objects.create_user(
            username="bench", password="bench", is_staff=True
        )
        extension_deploy(
            entry="processes/chain.ts",
            files={"processes/chain.ts": chain_source(args.steps)},
            by=user,
        )
        actor = Actor(user=user)

        def engine_run() -> None:
            run = run_invoke(process_id="bench:chain", body={}, user=user)
            run_deliver(str(run.pk))

        def bare_run(offset: int) -> None:
            for n in range(args.steps):
                record_create(
                    actor=actor,
                    record_type="legacy_customer",
                    parent={"n": n, "run": offset},
                    idempotency_key=f"bare:{offset}:{n}",
                )

        engine_run(), bare_run(-1)  # warm-up: sandbox child, TypeScript, caches
        engine_s = bare_s = 0.0
        for r in range(args.runs):
            engine_s += timed(engine_run)
            bare_s += timed(lambda r=r: bare_run(r))
        states = set(ProcessRun.objects.values_list("state", flat=True))
        assert states == {"committed"}, states
        steps = args.steps * args.runs
        print(f"Turbobase engine bench — {vendor}, {args.runs} runs of a {args.steps}-step chain")
        print(
            f"per step: engine {engine_s / steps * 1000:.2f} ms, bare boundary {bare_s / steps * 1000:.2f} ms"
        )
        print(ratio_line("chain of creates", engine_s, bare_s, steps, "steps", TARGET))
    return 0


if __name__ == "__main__":
    sys.exit(main())
