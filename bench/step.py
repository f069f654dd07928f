"""Step bench: a steady-state engine step against the floor of a durable step and DBOS, one run.

- floor: one transaction holding a record INSERT and a ledger INSERT (bare SQL via psycopg on the
  bench database, into the scratch tables ``bench_record`` / ``bench_ledger`` made here);
- bare insert: one autocommitted record INSERT;
- engine step: the marginal cost of a step of a chain of creates performed in this process (what
  a lane worker does), (a 20-step run − a 2-step run) / 18, so delivery start and end are not in
  it; statements per step counted the same way with Django's CaptureQueriesContext, on two more
  deliveries apart from the timed ones (the query log is not a worker's work, so not in the time);
- DBOS: its transactional step doing the same INSERT (``bench/dbos_step.py``, its own process and
  its own system database on the same server), or None with the reason when it cannot run.

Each round measures the floor, the bare insert and the engine back to back, so drift on a shared
machine hits them alike; medians of rounds. DBOS runs after them, in its own process.
"""

from __future__ import annotations

import json
import statistics
import time
import uuid
from dataclasses import dataclass, field

import psycopg
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from references import RECORD_INSERT, dbos_measure, floor_seconds, scratch_connect

from extensions.deploy import extension_deploy
from processes.engine.runner import run_deliver
from processes.invoke import run_invoke
from processes.models import ProcessRun

LONG, SHORT = 20, 2


def chain_source(process_id: str, steps: int) -> str:
    body = ",\n".join(
        f"    {{ id: 's{n}', recordType: 'legacy_customer',"
        f" build: (ctx) => ({{ parent: {{ n: {n}, run: ctx.runId }} }}) }}"
        for n in range(steps)
    )
    return (
        "import { defineProcess } from '@turbobase/extensions';\n"
        f"export default defineProcess({{\n  id: '{process_id}',\n  input: {{ type: 'object' }},\n"
        f"  steps: [\n{body}\n  ],\n}});\n"
    )


@dataclass
class StepResult:
    floor_us: float
    bare_insert_us: float
    engine_step_us: float
    engine_run_per_step_us: float
    statements_per_step: float
    dbos_step_us: float | None
    dbos_note: str
    extra: dict = field(default_factory=dict)

    def result(self) -> dict:
        dbos = self.dbos_step_us
        return {
            "bench": "step",
            "floor_us": round(self.floor_us, 1),
            "bare_insert_us": round(self.bare_insert_us, 1),
            "engine_step_us": round(self.engine_step_us, 1),
            "dbos_step_us": None if dbos is None else round(dbos, 1),
            "engine_over_floor": round(self.engine_step_us / self.floor_us, 2),
            "engine_over_dbos": None if dbos is None else round(self.engine_step_us / dbos, 2),
            "statements_per_step": round(self.statements_per_step, 2),
        }


def floor_round(conn: psycopg.Connection, per_round: int) -> tuple[float, float]:
    """One round's per-operation seconds of (floor transaction, bare insert)."""
    floor = floor_seconds(conn, ["create"] * per_round, 1)
    run = uuid.uuid4()
    started = time.perf_counter()
    for n in range(per_round):
        conn.execute(RECORD_INSERT, [f"bare:{run}:{n}", json.dumps({"n": n})])
    return floor, (time.perf_counter() - started) / per_round


class EngineSeries:
    """Deliveries of the 20-step and 2-step chains, in this process (what a lane worker does)."""

    def __init__(self) -> None:
        self.user = get_user_model().objects.create_user(
            username="bench-step", password="bench", is_staff=True
        )
        for pid, steps in (("bench:chain-long", LONG), ("bench:chain-short", SHORT)):
            name = f"processes/{pid.split(':')[1]}.ts"
            extension_deploy(entry=name, files={name: chain_source(pid, steps)}, by=self.user)
        self.deliver("bench:chain-long"), self.deliver("bench:chain-short")  # warm-up
        self.marginal: list[float] = []
        self.whole: list[float] = []
        self.statements: list[float] = []

    def deliver(self, pid: str) -> float:
        run = run_invoke(process_id=pid, body={}, user=self.user)
        started = time.perf_counter()
        run_deliver(str(run.pk))
        return time.perf_counter() - started

    def counted(self, pid: str) -> int:
        """The statements of one delivery — apart from the timed ones: Django's query log (what
        counts them) is not part of a worker's step, so it is not in the time either."""
        run = run_invoke(process_id=pid, body={}, user=self.user)
        with CaptureQueriesContext(connection) as queries:
            run_deliver(str(run.pk))
        return len(queries.captured_queries)

    def round(self) -> None:
        long_s, short_s = self.deliver("bench:chain-long"), self.deliver("bench:chain-short")
        self.marginal.append((long_s - short_s) / (LONG - SHORT))
        self.whole.append(long_s / LONG)
        long_q, short_q = self.counted("bench:chain-long"), self.counted("bench:chain-short")
        self.statements.append((long_q - short_q) / (LONG - SHORT))

    def check(self) -> None:
        states = set(
            ProcessRun.objects.filter(process_id__startswith="bench:chain").values_list(
                "state", flat=True
            )
        )
        if states != {"committed"}:
            raise RuntimeError(f"engine bench runs did not all commit: {states}")


def step_bench(*, rounds: int = 7, per_round: int = 100) -> StepResult:
    floors, bares = [], []
    engine = EngineSeries()
    with scratch_connect() as conn:
        floor_round(conn, per_round)  # warm-up
        for _ in range(rounds):  # interleaved: load on a shared machine hits both alike
            floor_s, bare_s = floor_round(conn, per_round)
            floors.append(floor_s)
            bares.append(bare_s)
            engine.round()
    engine.check()
    dbos_s, note = dbos_measure(rounds=rounds, long=LONG, short=SHORT)
    return StepResult(
        floor_us=statistics.median(floors) * 1e6,
        bare_insert_us=statistics.median(bares) * 1e6,
        engine_step_us=statistics.median(engine.marginal) * 1e6,
        engine_run_per_step_us=statistics.median(engine.whole) * 1e6,
        statements_per_step=statistics.median(engine.statements),
        dbos_step_us=None if dbos_s is None else dbos_s * 1e6,
        dbos_note=note,
    )
