"""The ``await_chain`` shape: one ``awaitSource`` create into ``purchaseOrder`` (the sandbox
source), end to end — the delivery that writes it and parks, the outbound drain that sends it and
folds the verdict into the waiting ledger row and wakes the run, and the resumed delivery that ends
the run — against the per-step floor of one create (one transaction a step). DBOS: null (no
connected system to wait on there).

Each round times the three phases in this process (what a lane worker and the outbound worker do);
statements are counted on one more run, apart from the timed ones.
"""

from __future__ import annotations

import statistics
import time

from django.contrib.auth import get_user_model
from references import floor_seconds, scratch_connect
from shape_chains import ShapeOutcome
from shape_result import shape_result, statements_counted

from extensions.deploy import extension_deploy
from processes.engine.runner import run_deliver
from processes.invoke import run_invoke
from processes.models import ProcessRun, RunState
from sources.outbound import outbound_drain

PROCESS_ID = "bench:await-one"
SOURCE = """
import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'bench:await-one',
  input: { type: 'object' },
  steps: [
    { id: 'po', recordType: 'purchaseOrder', awaitSource: true,
      build: (ctx) => ({ parent: { entity_id: 'V-' + ctx.runId } }) },
  ],
});
"""


def _step(user) -> tuple[str, float]:
    """One awaitSource step end to end: (run id, seconds)."""
    run = run_invoke(process_id=PROCESS_ID, body={}, user=user)
    started = time.perf_counter()
    run_deliver(str(run.pk))  # writes the step and parks the run
    outbound_drain(record_type="purchaseOrder")  # sends it, folds the verdict, wakes the run
    run_deliver(str(run.pk))  # the resumed delivery
    return str(run.pk), time.perf_counter() - started


def await_bench(*, rounds: int = 5) -> ShapeOutcome:
    """The ``await_chain`` shape, medians of ``rounds``."""
    user = get_user_model().objects.get_or_create(username="bench-shape")[0]
    name = "processes/bench-await-one.ts"
    extension_deploy(entry=name, files={name: SOURCE}, by=user)
    run_ids = [_step(user)[0]]  # warm-up: sandbox, caches
    timed, floors = [], []
    with scratch_connect() as conn:
        floor_seconds(conn, ["create"] * 16, 1)  # warm-up
        for _ in range(rounds):  # interleaved: load on a shared machine hits both alike
            run_id, seconds = _step(user)
            run_ids.append(run_id)
            timed.append(seconds)
            floors.append(floor_seconds(conn, ["create"] * 16, 1))
    with statements_counted() as counted:
        run_ids.append(_step(user)[0])
    states = set(ProcessRun.objects.filter(pk__in=run_ids).values_list("state", flat=True))
    if states != {RunState.COMMITTED}:
        raise RuntimeError(f"await_chain: the engine's runs did not all commit: {states}")
    floor = statistics.median(floors) * 1e6
    result = shape_result(
        "await_chain",
        "us_per_step",
        statistics.median(timed) * 1e6,
        statements_per_step=float(counted.count),
        per_step_floor=floor,
        grouped_floor=floor,
        dbos=None,
    )
    rows = [
        ("engine", f"{result['value']:10.1f} µs   (deliver, drain, resumed delivery)"),
        ("statements per step", f"{result['statements_per_step']:10.2f}"),
        ("per-step floor (one create a transaction)", f"{result['per_step_floor']:10.1f} µs"),
        ("DBOS", "null (no connected system to wait on)"),
    ]
    return ShapeOutcome(result, rows)
