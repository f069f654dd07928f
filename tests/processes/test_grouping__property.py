"""Proof that grouping changes nothing (issue 21): hypothesis generates processes — creates,
updates, deletes, ctx.query reads, declined steps, forEach groups, awaitSource on the sandbox
source — and instance states — hooks that sometimes refuse, delete caps and rules that sometimes
hold or refuse, source verdicts that sometimes refuse, a rollback on failure — and runs each once
grouped (``processes.step_group_max`` > 1) and once with every step written alone (1), from the
same fresh state. Records, write trail, ledger, outbound writes in order, what reached the source
and the run's state must be the same, generated ids aside (``grouping_support.observed``). The
same for ``eachRow`` migrations: batches of ``processes.slice_batch_rows`` rows against row by row.

Grouping happens on PostgreSQL only; on SQLite both runs write each step alone, which still checks
that one process run twice from one state ends the same. Bounded for CI: a fixed number of
derandomized examples (the same ones on every run), each one deploy and two runs, and no
shrinking (a failure prints its first example's process source and instance state).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.test import override_settings
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from extensions.deploy import extension_deploy
from guardrails.rules import rule_set
from guardrails.settings import setting_set
from records.boundary import record_create
from records.trail import Actor
from sources.scripting import sandbox_script_set
from tests.processes.engine_support import deploy, invoke, pump
from tests.processes.grouping_support import observed, wipe
from tests.processes.writes_support import assert_writes_counted

pytestmark = pytest.mark.django_db(transaction=True)  # grouping needs autocommit (no test atomic)


@pytest.fixture(autouse=True)
def _no_deploy_typecheck():
    """Generated processes write an undeclared field on purpose (the refusal must match grouped
    and alone), which the deploy's type check would refuse: off here, tested in
    test_authoring_types."""
    with override_settings(EXTENSIONS_DEPLOY_TYPECHECK=0):
        yield


PID = "p:generated"
EXAMPLES = 25


def _bounded(examples: int) -> settings:
    """Hypothesis bounded for CI: ``examples`` derandomized examples, no shrinking."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,  # the same examples on every run: CI is reproducible
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure names its first example
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,  # the fixtures hold across examples by design
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
        ],
    )


def _assert_same(first: dict, second: dict, source: str, state: object) -> None:
    """Every part an outsider sees is the same in both runs (``grouping_support.observed``); a
    difference names the process source and the generated state it ran from."""
    for part in first:
        assert first[part] == second[part], f"{part} differs for:\n{source}\n{state}"


# Hooks deployed as extensions: each refuses a save whose marker field says 'refuse'.
HOOKS = {
    "hooks/legacy.ts": """import { defineHook } from '@turbobase/extensions';
export default defineHook({ id: 'p:legacy-hook', recordType: 'legacy_customer', on: 'before_save',
  run(ctx) {
    if (ctx.record.parent.tag === 'refuse') {
      return { reject: { code: 'TAG_REFUSED', field: 'parent.tag', message: 'tag refuse' } };
    }
    return undefined;
  } });
""",
    "hooks/customer.ts": """import { defineHook } from '@turbobase/extensions';
export default defineHook({ id: 'p:customer-hook', recordType: 'customer', on: 'before_save',
  run(ctx) {
    if (ctx.record.parent.memo === 'refuse') {
      return { reject: { code: 'MEMO_REFUSED', field: 'parent.memo', message: 'memo refuse' } };
    }
    return undefined;
  } });
""",
}

TYPES = ("legacy_customer", "customer")
# 'refuse' meets a hook, 'undeclared' the catalog's check: now and then, so most runs go far.
TAGS = st.sampled_from(["ok"] * 10 + ["refuse", "undeclared"])


@dataclass(frozen=True)
class Instance:
    """The instance state a generated process runs in (set again before each of its two runs)."""

    grouped: int  # processes.step_group_max of the grouped run
    legacy_seeds: int
    customer_seeds: int
    items: tuple[str, ...]  # input.items, the forEach groups' items (their tags)
    delete_cap: int
    legacy_delete: str | None  # a guardrail rule on legacy_customer deletes (None: stock)
    customer_delete: str | None
    source_refuses: str  # "": the sandbox takes customer writes; else the operation it refuses


@dataclass(frozen=True)
class Generated:
    source: str
    instance: Instance


def _ref(step_id: str) -> str:
    return f"ctx.steps[{step_id!r}]"


def _parent(record_type: str, n: int | str, tag: str, extra: str) -> str:
    """The build's parent: ``tag`` 'refuse' meets the hook, 'undeclared' the catalog."""
    bad = ", colour: 'red'" if tag == "undeclared" else ""
    if record_type == "legacy_customer":
        return f"{{ n: {n}, tag: '{tag}', custom: {extra}{bad} }}"
    return f"{{ company_name: 'C' + {n}, memo: '{tag}', custom: {extra}{bad} }}"


class Writer:
    """Draws one process's steps; remembers what earlier steps made, so later ones can address it."""

    def __init__(self, draw, instance: Instance) -> None:
        self.draw, self.instance = draw, instance
        self.made: dict[str, list[str]] = {t: [] for t in TYPES}  # step ids that wrote a record
        self.count = 0

    def _when(self) -> str:
        kind = self.draw(st.sampled_from([""] * 6 + ["false", "after"]))
        earlier = [s for made in self.made.values() for s in made]
        if kind == "false":
            return "when: (ctx) => false, "
        if kind == "after" and earlier:
            step = self.draw(st.sampled_from(earlier))
            return f"when: (ctx) => {_ref(step)}?.disposition === 'confirmed', "
        return ""

    def _target(self, record_type: str) -> str | None:
        """A JS expression for a record of this type: an earlier step's, or a seed's."""
        seeds = (
            self.instance.legacy_seeds
            if record_type == "legacy_customer"
            else self.instance.customer_seeds
        )
        options = [f"{_ref(s)}?.pgRowId" for s in self.made[record_type]]
        options += [f"ctx.input.seeds.{record_type}[{i}]" for i in range(seeds)]
        return self.draw(st.sampled_from(options)) if options else None

    def _extra(self) -> str:
        earlier = [s for made in self.made.values() for s in made]
        if not earlier or self.draw(st.booleans()):
            return "{}"
        step = self.draw(st.sampled_from(earlier))
        return f"{{ after: {_ref(step)}?.pgRowId ?? null, was: {_ref(step)}?.disposition ?? null }}"

    def step(self) -> str:
        kind = self.draw(
            st.sampled_from(["create"] * 4 + ["update"] * 2 + ["delete", "query", "forEach"])
        )
        step_id = f"s{self.count}"
        self.count += 1
        record_type = self.draw(st.sampled_from(TYPES))
        if kind in ("update", "delete") and self._target(record_type) is None:
            kind = "create"
        if kind == "forEach":
            return self._for_each(step_id)
        if kind == "query":
            return self._query(step_id)
        when = self._when()
        if kind == "delete":
            target = self._target(record_type)
            on_refused = self.draw(st.sampled_from(["continue", "continue", "stop"]))
            return (
                f"{{ id: '{step_id}', recordType: '{record_type}', {when}"
                f"delete: {{ pgRowId: (ctx) => {target} }}, onRefused: '{on_refused}' }}"
            )
        tag = self.draw(TAGS)
        parent = _parent(record_type, self.count, tag, self._extra())
        declines = self.draw(st.integers(0, 11)) == 0  # now and then its build declines
        build = "(ctx) => null" if declines else f"(ctx) => ({{ parent: {parent} }})"
        head = f"{{ id: '{step_id}', recordType: '{record_type}', {when}"
        if kind == "update":
            target = self._target(record_type)
            if self.made[record_type] and self.draw(st.booleans()):  # often the record just made
                target = f"{_ref(self.made[record_type][-1])}?.pgRowId"
            address = (
                f"{{ step: '{target.split(chr(39))[1]}' }}"
                if target.startswith("ctx.steps") and self.draw(st.booleans())
                else f"{{ pgRowId: (ctx) => {target} }}"
            )
            self.made[record_type].append(step_id)
            return f"{head}update: {address}, build: {build} }}"
        awaits = record_type == "customer" and self.draw(st.integers(0, 3)) == 0
        self.made[record_type].append(step_id)
        return f"{head}{'awaitSource: true, ' if awaits else ''}build: {build} }}"

    def _query(self, step_id: str) -> str:
        """A create whose build reads what the steps before it wrote (as the invoker)."""
        read = self.draw(
            st.sampled_from(
                [
                    ("legacy_customer?select=n,tag", "`${r.n}:${r.tag}`"),
                    ("customer?select=company_name,memo", "`${r.company_name}:${r.memo}`"),
                ]
            )
        )
        self.made["legacy_customer"].append(step_id)
        return (
            f"{{ id: '{step_id}', recordType: 'legacy_customer', build: async (ctx) => {{\n"
            f"      const rows = await ctx.query('{read[0]}');\n"
            f"      return {{ parent: {{ n: {self.count}, tag: 'q', "
            f"custom: {{ seen: rows.map((r) => {read[1]}).sort() }} }} }};\n    }} }}"
        )

    def _for_each(self, step_id: str) -> str:
        """A repeated group over input.items: a create per item, sometimes updated in the group."""
        inner_type = self.draw(st.sampled_from(TYPES))
        parent = _parent(inner_type, f"{self.count * 100} + ctx.index", "' + ctx.item + '", "{}")
        inner = [
            f"{{ id: 'a', recordType: '{inner_type}', build: (ctx) => ({{ parent: {parent} }}) }}"
        ]
        if self.draw(st.booleans()):
            tag = self.draw(TAGS)
            again = _parent(inner_type, f"{self.count * 100 + 50} + ctx.index", tag, "{}")
            inner.append(
                f"{{ id: 'b', recordType: '{inner_type}', "
                f"update: {{ pgRowId: (ctx) => ctx.steps[`{step_id}:${{ctx.index}}:a`]?.pgRowId }}, "
                f"build: (ctx) => ({{ parent: {again} }}) }}"
            )
        body = ",\n      ".join(inner)
        return (
            f"{{ id: '{step_id}', forEach: {{ input: 'items' }}, steps: [\n      {body}\n    ] }}"
        )


@st.composite
def generated(draw) -> Generated:
    instance = Instance(
        grouped=draw(st.sampled_from([16, 16, 3, 2])),
        legacy_seeds=draw(st.integers(0, 3)),
        customer_seeds=draw(st.integers(0, 2)),
        items=tuple(draw(st.lists(TAGS, max_size=4))),
        delete_cap=draw(st.sampled_from([60, 60, 0, 1, 2])),
        legacy_delete=draw(st.sampled_from([None] * 3 + ["hold", "deny", "allow_with_audit"])),
        customer_delete=draw(st.sampled_from([None, None, "allow", "allow", "deny"])),
        source_refuses=draw(st.sampled_from(["", "", "", "create", "update", "delete"])),
    )
    writer = Writer(draw, instance)
    steps = [writer.step() for _ in range(draw(st.integers(3, 12)))]
    on_failure = draw(st.sampled_from(["stop", "stop", "rollback"]))
    source = (
        "import { defineProcess } from '@turbobase/extensions';\n"
        "export default defineProcess({\n"
        f"  id: '{PID}',\n"
        "  input: { type: 'object' },\n"
        f"  onFailure: '{on_failure}',\n"
        "  steps: [\n    " + ",\n    ".join(steps) + "\n  ],\n"
        "});\n"
    )
    return Generated(source, instance)


def _instance_set(instance: Instance, group_max: int) -> None:
    setting_set("processes.step_group_max", group_max)
    setting_set("guardrails.max_deletes_per_min", instance.delete_cap)
    setting_set("processes.delete_wait_budget_ms", 1)  # a held cap ends the run, not a wait
    if instance.legacy_delete:
        rule_set(record_type="legacy_customer", action="delete", decision=instance.legacy_delete)
    if instance.customer_delete:
        rule_set(record_type="customer", action="delete", decision=instance.customer_delete)


def _run_once(instance: Instance, group_max: int, alice) -> dict:
    wipe()
    _instance_set(instance, 1)  # the seeds are made the same way for both runs
    actor = Actor(alice)
    seeds = {
        "legacy_customer": [
            str(
                record_create(actor=actor, record_type="legacy_customer", parent={"n": i}).record.pk
            )
            for i in range(instance.legacy_seeds)
        ],
        "customer": [
            str(
                record_create(
                    actor=actor, record_type="customer", parent={"company_name": f"Seed {i}"}
                ).record.pk
            )
            for i in range(instance.customer_seeds)
        ],
    }
    pump()  # the customer seeds reach the source and come back synced
    if instance.source_refuses:
        sandbox_script_set(
            "customer",
            operation=instance.source_refuses,
            refuse_code="SANDBOX_REFUSED",
            refuse_message="the sandbox refuses this write",
        )
    _instance_set(instance, group_max)
    run = invoke(PID, {"seeds": seeds, "items": list(instance.items)}, alice)
    pump()
    assert_writes_counted(run.pk)
    return observed(run, seeds["legacy_customer"] + seeds["customer"])


@pytest.fixture
def hooks(admin_user) -> None:
    for entry, source in HOOKS.items():
        extension_deploy(entry=entry, files={entry: source}, by=admin_user)


@_bounded(EXAMPLES)
@given(case=generated())
def test_grouped_and_one_by_one_runs_leave_the_same_state(case, hooks, admin_user, alice):
    deploy(case.source, by=admin_user, name="processes/generated.ts")
    grouped = _run_once(case.instance, case.instance.grouped, alice)
    alone = _run_once(case.instance, 1, alice)
    _assert_same(grouped, alone, case.source, case.instance)


# -- migrations: a slice's rows written in batches (processes.slice_batch_rows) or row by row ------

MIGRATION_EXAMPLES = 10
MIGRATION_PID = "p:generated-migration"
# How each row's create goes: written, refused by the hook or the catalog, declined by a `when`.
ROW_NOTES = st.sampled_from(["ok"] * 12 + ["refuse", "undeclared", "skip", "skip"])


@dataclass(frozen=True)
class Migration:
    source: str
    notes: tuple[str, ...]  # one migration_item row each
    batch_rows: int  # processes.slice_batch_rows of the batched run
    slice_rows: int  # processes.slice_max_rows of both runs


@st.composite
def migrations(draw) -> Migration:
    target = draw(st.sampled_from(TYPES))
    field = "tag" if target == "legacy_customer" else "memo"
    name = (
        "n: Number(ctx.row.legacy_id.slice(1))"
        if target == "legacy_customer"
        else ("company_name: ctx.row.legacy_id")
    )
    # A `when` or no stamp step: rows go one at a time in both runs (no batch to compare).
    asks = draw(st.integers(0, 3)) == 0
    when = "when: (ctx) => ctx.row.note !== 'skip', " if asks else ""
    steps = [
        f"{{ id: 'create', recordType: '{target}', {when}build: (ctx) => ({{ parent: {{ {name}, "
        f"{field}: ctx.row.note, ...(ctx.row.note === 'undeclared' ? {{ colour: 'red' }} : {{}}) }} }}) }}"
    ]
    if draw(st.integers(0, 3)) > 0:
        steps.append(
            "{ id: 'stamp', recordType: 'migration_item', update: { pgRowId: (ctx) => ctx.row.pg_row_id },\n"
            "      build: (ctx) => ({ parent: { status: 'sent',"
            " target_pg_row_id: ctx.steps.create?.pgRowId ?? null } }) }"
        )
    source = (
        "import { defineProcess } from '@turbobase/extensions';\n"
        "export default defineProcess({\n"
        f"  id: '{MIGRATION_PID}',\n"
        "  input: { type: 'object' },\n"
        f"  onFailure: '{draw(st.sampled_from(['stop', 'rollback']))}',\n"
        "  eachRow: {\n"
        "    outstanding: () => 'migration_item?select=pg_row_id,legacy_id,note&status=eq.pending&order=legacy_id',\n"
        "    key: 'legacy_id',\n"
        "  },\n"
        "  steps: [\n    " + ",\n    ".join(steps) + "\n  ],\n"
        "});\n"
    )
    return Migration(
        source=source,
        notes=tuple(draw(st.lists(ROW_NOTES, min_size=1, max_size=12))),
        batch_rows=draw(st.sampled_from([2, 4, 1000])),
        slice_rows=draw(st.sampled_from([3, 500])),
    )


def _migrate_once(case: Migration, batch_rows: int, alice) -> dict:
    wipe()
    setting_set("processes.slice_max_rows", case.slice_rows)
    setting_set("processes.slice_batch_rows", batch_rows)
    # A row nothing stamps (refused, declined, no stamp step) is offered again by every slice:
    # the slice cap ends such a run, committed with what is outstanding.
    setting_set("processes.slice_cap", 4)
    actor = Actor(alice)
    rows = [
        str(
            record_create(
                actor=actor,
                record_type="migration_item",
                parent={"legacy_id": f"L{i:02d}", "note": note, "status": "pending"},
            ).record.pk
        )
        for i, note in enumerate(case.notes)
    ]
    run = invoke(MIGRATION_PID, {}, alice)
    pump()
    assert_writes_counted(run.pk)
    return observed(run, rows)


@_bounded(MIGRATION_EXAMPLES)
@given(case=migrations())
def test_batched_and_row_by_row_migrations_leave_the_same_state(case, hooks, admin_user, alice):
    deploy(case.source, by=admin_user, name="processes/generated-migration.ts")
    batched = _migrate_once(case, case.batch_rows, alice)
    alone = _migrate_once(case, 1, alice)
    _assert_same(batched, alone, case.source, case)


# -- a connected type's deletes among other writes: caps, rules, the source's verdicts ----------

SWEEP_EXAMPLES = 10
SWEEP_PID = "p:generated-sweep"


@dataclass(frozen=True)
class Sweep:
    source: str
    customers: int  # synced customer seeds the deletes address
    grouped: int
    delete_cap: int
    rule: str  # the guardrail rule on customer deletes
    source_refuses: bool  # the sandbox refuses customer deletes


@st.composite
def sweeps(draw) -> Sweep:
    """Creates, updates and deletes of connected records (customer) interleaved, so that a
    group's connected delete meets a cap that holds it, a rule that holds it, or a refusal."""
    customers = draw(st.integers(1, 4))
    steps = []
    for n in range(draw(st.integers(3, 9))):
        kind = draw(st.sampled_from(["legacy", "legacy", "update", "customer", "delete", "delete"]))
        head = f"{{ id: 's{n}', "
        if kind == "delete":
            target = draw(st.integers(0, customers - 1))
            on_refused = draw(st.sampled_from(["continue", "stop"]))
            steps.append(
                f"{head}recordType: 'customer', delete: {{ pgRowId: (ctx) => "
                f"ctx.input.customers[{target}] }}, onRefused: '{on_refused}' }}"
            )
        elif kind == "update":
            steps.append(
                f"{head}recordType: 'legacy_customer', update: {{ pgRowId: (ctx) => "
                f"ctx.input.legacy }}, build: (ctx) => ({{ parent: {{ n: {n} }} }}) }}"
            )
        elif kind == "customer":
            steps.append(
                f"{head}recordType: 'customer', build: (ctx) => "
                f"({{ parent: {{ company_name: 'N{n}' }} }}) }}"
            )
        else:
            steps.append(
                f"{head}recordType: 'legacy_customer', build: (ctx) => ({{ parent: {{ n: {n} }} }}) }}"
            )
    source = (
        "import { defineProcess } from '@turbobase/extensions';\n"
        "export default defineProcess({\n"
        f"  id: '{SWEEP_PID}',\n"
        "  input: { type: 'object' },\n"
        f"  onFailure: '{draw(st.sampled_from(['stop', 'stop', 'rollback']))}',\n"
        "  steps: [\n    " + ",\n    ".join(steps) + "\n  ],\n"
        "});\n"
    )
    return Sweep(
        source=source,
        customers=customers,
        grouped=draw(st.sampled_from([16, 16, 2])),
        delete_cap=draw(st.sampled_from([60, 0, 1, 2, 3])),
        rule=draw(st.sampled_from(["allow", "allow", "allow_with_audit", "hold"])),
        source_refuses=draw(st.integers(0, 4)) == 0,
    )


def _sweep_once(case: Sweep, group_max: int, alice) -> dict:
    wipe()
    setting_set("processes.step_group_max", 1)
    actor = Actor(alice)
    legacy = record_create(actor=actor, record_type="legacy_customer", parent={"n": -1}).record
    customers = [
        record_create(
            actor=actor, record_type="customer", parent={"company_name": f"S{i}"}
        ).record.pk
        for i in range(case.customers)
    ]
    pump()  # the seeds reach the source and come back synced
    if case.source_refuses:
        sandbox_script_set(
            "customer",
            operation="delete",
            refuse_code="SANDBOX_REFUSED",
            refuse_message="the sandbox refuses this write",
        )
    setting_set("processes.step_group_max", group_max)
    setting_set("guardrails.max_deletes_per_min", case.delete_cap)
    setting_set("processes.delete_wait_budget_ms", 1)  # a held cap ends the run, not a wait
    rule_set(record_type="customer", action="delete", decision=case.rule)
    body = {"legacy": str(legacy.pk), "customers": [str(pk) for pk in customers]}
    run = invoke(SWEEP_PID, body, alice)
    pump()
    assert_writes_counted(run.pk)
    return observed(run, [str(legacy.pk)] + [str(pk) for pk in customers])


@_bounded(SWEEP_EXAMPLES)
@given(case=sweeps())
def test_connected_deletes_grouped_and_alone_leave_the_same_state(case, admin_user, alice):
    deploy(case.source, by=admin_user, name="processes/generated-sweep.ts")
    grouped = _sweep_once(case, case.grouped, alice)
    alone = _sweep_once(case, 1, alice)
    _assert_same(grouped, alone, case.source, case)
