"""Chain shapes: a step of a chain of creates, of updates, of deletes, of mixed create / update /
``ctx.query`` steps, and a run of a single step, each against its floors and DBOS in the same run.

The engine side deploys the shape's process, invokes it and performs its delivery in this process
(what a lane worker does), through the public entry points only, so it measures whatever the
engine does. A chain step's cost is the marginal one, (a LONG-step delivery − a SHORT-step one) ÷
the difference, so a delivery's start and end are not in it; LONG − SHORT is two full groups of
``processes.step_group_max`` steps (rounded up to whole cycles of a mixed chain). A single step is
the whole delivery of a one-step run (claim to end: there is nothing to share it with).

Each round runs the engine, reads the group size it used (``shape_result.group_size``), then
measures the per-step floor (one transaction a step) and the grouped floor (that many steps a
transaction) on the same steps, so load on a shared machine hits all three alike; medians of
rounds. Statements per step are counted on one more pair of deliveries, apart from the timed ones.
Updates and deletes address ``legacy_customer`` records made beforehand through the boundary
(untimed): an app-owned type, so a delete removes the row, as the floor's DELETE does.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from references import dbos_measure, floor_seconds, scratch_connect
from shape_result import group_size, shape_result, statements_counted

from extensions.deploy import extension_deploy
from guardrails.settings import setting_get
from processes.engine.runner import run_deliver
from processes.invoke import run_invoke
from processes.models import ProcessRun, RunState
from records.boundary import record_create
from records.trail import Actor

# Each chain shape: its steps as the floor names them (repeated to the chain's length), and the
# DBOS workflow doing the same writes.
CHAINS: dict[str, tuple[tuple[str, ...], str]] = {
    "create_chain": (("create",), "create"),
    "update_chain": (("update",), "update"),
    "mixed_chain": (("create", "update_new", "query_create"), "mixed"),
    "delete_chain": (("delete",), "delete"),
    "single_step": (("create",), "single"),
}


def _entry(kind: str, n: int) -> str:
    head = f"{{ id: 's{n}', recordType: 'legacy_customer', "
    parent = f"{{ n: {n}, run: ctx.runId }}"
    if kind == "create":
        return head + f"build: (ctx) => ({{ parent: {parent} }}) }}"
    if kind == "update":
        return head + (
            f"update: {{ pgRowId: (ctx) => ctx.input.ids[{n}] }},"
            f" build: (ctx) => ({{ parent: {parent} }}) }}"
        )
    if kind == "delete":
        return head + f"delete: {{ pgRowId: (ctx) => ctx.input.ids[{n}] }} }}"
    if kind == "update_new":
        return head + (
            f"update: {{ pgRowId: (ctx) => ctx.steps.s{n - 1}.pgRowId }},"
            f" build: (ctx) => ({{ parent: {{ note: 'updated', step: {n} }} }}) }}"
        )
    if kind == "query_create":
        return head + (
            "build: async (ctx) => { const seen = await ctx.query("
            f"`legacy_customer?select=note&pg_row_id=eq.${{ctx.steps.s{n - 1}.pgRowId}}`);"
            f" return {{ parent: {{ n: {n}, run: ctx.runId, note: seen[0]?.note ?? null }} }}; }} }}"
        )
    raise ValueError(f"unknown step kind {kind!r}")


def chain_source(process_id: str, kinds: list[str]) -> str:
    body = ",\n".join("    " + _entry(kind, n) for n, kind in enumerate(kinds))
    return (
        "import { defineProcess } from '@turbobase/extensions';\n"
        f"export default defineProcess({{\n  id: '{process_id}',\n  input: {{ type: 'object' }},\n"
        f"  steps: [\n{body}\n  ],\n}});\n"
    )


def chain_lengths(shape: str) -> tuple[int, int]:
    """(LONG, SHORT) steps of a shape: SHORT one cycle, LONG two full groups more."""
    cycle = CHAINS[shape][0]
    if shape == "single_step":
        return 1, 0
    extra = 2 * max(1, setting_get("processes.step_group_max"))
    return len(cycle) + math.ceil(extra / len(cycle)) * len(cycle), len(cycle)


@dataclass
class ShapeOutcome:
    """A shape's RESULT line and the table rows printed above it."""

    result: dict
    rows: list[tuple[str, str]] = field(default_factory=list)


class ChainEngine:
    """The shape's processes deployed, and its deliveries timed or counted."""

    def __init__(self, shape: str, user) -> None:
        self.shape, self.user, self.actor = shape, user, Actor(user=user)
        self.cycle = CHAINS[shape][0]
        self.long, self.short = chain_lengths(shape)
        self.ids: dict[int, str] = {}
        self.run_ids: list[str] = []
        for steps in {self.long, self.short} - {0}:
            pid = self.process_id(steps)
            kinds = [self.cycle[n % len(self.cycle)] for n in range(steps)]
            name = f"processes/{pid.replace(':', '-')}.ts"
            extension_deploy(entry=name, files={name: chain_source(pid, kinds)}, by=user)
        self._update_targets = self._records(self.long) if "update" in self.cycle else []

    def process_id(self, steps: int) -> str:
        return f"bench:{self.shape.replace('_', '-')}-{steps}"

    def _records(self, count: int) -> list[str]:
        return [
            str(
                record_create(
                    actor=self.actor, record_type="legacy_customer", parent={"n": n}
                ).record.pk
            )
            for n in range(count)
        ]

    def _input(self, steps: int) -> dict:
        if "delete" in self.cycle:
            return {"ids": self._records(steps)}
        return {"ids": self._update_targets[:steps]} if self._update_targets else {}

    def deliver(self, steps: int) -> float:
        """Seconds of one delivery of the ``steps``-step process (0 for none)."""
        if not steps:
            return 0.0
        run = run_invoke(process_id=self.process_id(steps), body=self._input(steps), user=self.user)
        started = time.perf_counter()
        run_deliver(str(run.pk))
        seconds = time.perf_counter() - started
        self.run_ids.append(str(run.pk))
        return seconds

    def counted(self, steps: int) -> int:
        if not steps:
            return 0
        run = run_invoke(process_id=self.process_id(steps), body=self._input(steps), user=self.user)
        with statements_counted() as counted:
            run_deliver(str(run.pk))
        self.run_ids.append(str(run.pk))
        return counted.count

    def check(self) -> None:
        states = set(ProcessRun.objects.filter(pk__in=self.run_ids).values_list("state", flat=True))
        if states != {RunState.COMMITTED}:
            raise RuntimeError(f"{self.shape}: the engine's runs did not all commit: {states}")


def chain_bench(shape: str, *, rounds: int = 5, dbos: bool = True) -> ShapeOutcome:
    """One chain shape (or ``single_step``) against its floors and DBOS (unless ``dbos`` is
    false: then null), medians of ``rounds``."""
    engine = ChainEngine(shape, get_user_model().objects.get_or_create(username="bench-shape")[0])
    engine.deliver(engine.long), engine.deliver(engine.short)  # warm-up: sandbox, caches
    marginal, groups, per_step, grouped = [], [], [], []
    floor_kinds = [engine.cycle[n % len(engine.cycle)] for n in range(2 * max(engine.long, 16))]
    with scratch_connect() as conn:
        floor_seconds(conn, floor_kinds, 1)  # warm-up
        for _ in range(rounds):  # interleaved: load on a shared machine hits all alike
            long_s = engine.deliver(engine.long)
            groups.append(group_size(engine.run_ids[-1:]))
            short_s = engine.deliver(engine.short)
            marginal.append((long_s - short_s) / (engine.long - engine.short))
            per_step.append(floor_seconds(conn, floor_kinds, 1))
            grouped.append(floor_seconds(conn, floor_kinds, groups[-1]))
    statements = engine.counted(engine.long) - engine.counted(engine.short)
    engine.check()
    dbos_s, note = (
        dbos_measure(rounds=rounds, shape=CHAINS[shape][1], long=engine.long, short=engine.short)
        if dbos
        else (None, "not asked for")
    )
    group = int(statistics.median_low(groups))
    result = shape_result(
        shape,
        "us_per_step",
        statistics.median(marginal) * 1e6,
        statements_per_step=statements / (engine.long - engine.short),
        per_step_floor=statistics.median(per_step) * 1e6,
        grouped_floor=statistics.median(grouped) * 1e6,
        dbos=None if dbos_s is None else dbos_s * 1e6,
    )
    what = (
        "a whole one-step delivery"
        if shape == "single_step"
        else f"a step, ({engine.long}-step − {engine.short}-step delivery) / {engine.long - engine.short}"
    )
    rows = [
        ("engine", f"{result['value']:10.1f} µs   ({what})"),
        ("statements per step", f"{result['statements_per_step']:10.2f}"),
        ("per-step floor (one transaction a step)", f"{result['per_step_floor']:10.1f} µs"),
        (f"grouped floor ({group} steps a transaction)", f"{result['grouped_floor']:10.1f} µs"),
        ("DBOS", "null" if dbos_s is None else f"{result['dbos']:10.1f} µs   ({note})"),
    ]
    if dbos_s is None:
        rows[-1] = ("DBOS", f"null ({note})")
    return ShapeOutcome(result, rows)
