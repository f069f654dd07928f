"""Every kind of record type groups (issue 21): creates and updates into a connected type (their
outbound writes in the group's statement, sent once and in order after it commits), a type with a
``before_save`` hook (run per record as the write is made ready; a refusal refuses exactly that
step) and a watched type (a record trigger's run row commits in the group's transaction).

Each process is run twice from the same fresh state, grouped (``processes.step_group_max`` 16)
and with every step written alone (1), and what an outsider can see must be the same
(``grouping_support.observed``). Grouping happens on PostgreSQL only."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from guardrails.settings import setting_set
from processes.engine import grouping
from processes.engine.runner import run_deliver
from processes.models import ProcessRun
from records import watches
from records.boundary import record_create
from records.errors import HookRejection
from records.hooks import hook_register
from records.models import Record
from records.trail import Actor
from records.watches import RecordWritten
from sources.models import SandboxSend
from tests.processes.engine_support import deploy, invoke, pump
from tests.processes.grouping_support import Names, observed, wipe

pytestmark = [
    pytest.mark.django_db(transaction=True),  # grouping needs autocommit (no test atomic)
    pytest.mark.skipif(connection.vendor != "postgresql", reason="steps group on PostgreSQL only"),
]

CONNECTED = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:kinds-connected',
  input: { type: 'object' },
  steps: [
    { id: 'a', recordType: 'customer', build: (ctx) => ({ parent: { company_name: 'A' } }) },
    { id: 'b', recordType: 'customer',
      build: (ctx) => ({ parent: { company_name: 'B', memo: ctx.steps.a.pgRowId } }) },
    { id: 'u0', recordType: 'customer', update: { pgRowId: (ctx) => ctx.input.seeds[0] },
      build: (ctx) => ({ parent: { memo: 'u0 after ' + ctx.steps.b.pgRowId } }) },
    { id: 'u1', recordType: 'customer', update: { pgRowId: (ctx) => ctx.input.seeds[1] },
      build: (ctx) => ({ parent: { memo: 'u1' } }) },
    { id: 'c', recordType: 'customer', build: (ctx) => ({ parent: { company_name: 'C' } }) },
  ],
});
"""

WATCHER = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:kinds-on-approved',
  trigger: { record: 'legacy_customer', enters: { status: 'approved' } },
  input: { type: 'object' },
  steps: [{ id: 'note', recordType: 'migration_item',
    build: (ctx) => ({ parent: { legacy_id: ctx.input.pgRowId } }) }],
});
"""

WATCHED = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:kinds-watched',
  input: { type: 'object' },
  steps: [
    { id: 'a', recordType: 'legacy_customer', build: (ctx) => ({ parent: { status: 'approved' } }) },
    { id: 'b', recordType: 'legacy_customer', build: (ctx) => ({ parent: { status: 'draft' } }) },
    { id: 'u', recordType: 'legacy_customer', update: { pgRowId: (ctx) => ctx.input.seeds[0] },
      build: (ctx) => ({ parent: { status: 'approved' } }) },
  ],
});
"""


@pytest.fixture(autouse=True)
def one_group(monkeypatch):
    # A loaded machine must not split a group by its age: these tests count groups.
    monkeypatch.setattr(grouping, "RIDE_GROUP_MS", 60_000)


def _groups(queries: CaptureQueriesContext) -> int:
    return sum(1 for q in queries.captured_queries if q["sql"].startswith("WITH gate AS"))


def _run(process_id: str, record_type: str, group_max: int, alice) -> tuple[ProcessRun, list, int]:
    """The process run from a fresh state with two seeds of ``record_type`` (synced first), then
    every outbound write and triggered run drained: the run, the seeds' ids and how many group
    statements its delivery ran."""
    wipe()
    setting_set("processes.step_group_max", 16)
    seeds = [
        str(
            record_create(
                actor=Actor(alice), record_type=record_type, parent={"company_name": f"S{i}"}
            ).record.pk
        )
        for i in range(2)
    ]
    pump()  # seeds of a connected type reach the source and come back synced
    setting_set("processes.step_group_max", group_max)
    run = invoke(process_id, {"seeds": seeds}, alice)
    with CaptureQueriesContext(connection) as queries:
        run_deliver(str(run.pk))
    pump()
    return run, seeds, _groups(queries)


def test_creates_and_updates_into_a_connected_type_group_and_leave_as_alone(admin_user, alice):
    deploy(CONNECTED, by=admin_user)
    grouped_run, seeds, groups = _run("t:kinds-connected", "customer", 16, alice)
    grouped = observed(grouped_run, seeds)
    sent = list(SandboxSend.objects.order_by("id").values_list("operation", flat=True))
    _, seeds_alone, groups_alone = _run("t:kinds-connected", "customer", 1, alice)
    alone = observed(ProcessRun.objects.get(), seeds_alone)

    assert groups == 1  # the five steps, their outbound writes, in one statement
    assert groups_alone == 5
    assert grouped == alone
    assert grouped["run"][0] == "committed"
    # Outbound writes queued in step order, each sent once, in that order, and confirmed.
    assert [(w[2], w[3], w[4]) for w in grouped["outbound"]][2:] == [
        ("step:a", "create", "confirmed"),
        ("step:b", "create", "confirmed"),
        ("seed:0", "update", "confirmed"),
        ("seed:1", "update", "confirmed"),
        ("step:c", "create", "confirmed"),
    ]
    assert sent == ["create", "create", "create", "create", "update", "update", "create"]
    assert [s[2] for s in grouped["sent"]][2:] == ["step:a", "step:b", "seed:0", "seed:1", "step:c"]


def test_a_hook_refusing_inside_a_group_refuses_that_step_as_alone(admin_user, alice):
    def hook(ctx):
        if str(ctx.record["parent"].get("memo", "")).startswith("u0"):
            raise HookRejection("u0 is refused", code="U0_REFUSED", field="parent.memo")

    deploy(CONNECTED, by=admin_user)
    unregister = hook_register(slot="before_save", record_type="customer", hook=hook)
    try:
        grouped_run, seeds, groups = _run("t:kinds-connected", "customer", 16, alice)
        grouped = observed(grouped_run, seeds)
        _, seeds_alone, _ = _run("t:kinds-connected", "customer", 1, alice)
        alone = observed(ProcessRun.objects.get(), seeds_alone)
    finally:
        unregister()

    assert grouped == alone
    assert groups == 1  # a and b, written before the refusal is
    assert grouped["run"][0] == "failed"
    assert [(row[1], row[6], row[16]) for row in grouped["ledger"]] == [
        ("a", "confirmed", None),
        ("b", "confirmed", None),
        ("u0", "failed", "U0_REFUSED"),
        ("u1", "skipped", None),
        ("c", "skipped", None),
    ]
    refused = [t for t in grouped["trail"] if t[1] == "refused"]
    assert refused == [
        ("update", "refused", "U0_REFUSED", "parent.memo", "customer", "seed:0")
        + ("u0 is refused", "run", "u0")
    ]
    # Nothing after the refused step landed: seed 1 unchanged, no record C, no outbound of them.
    versions = [Record.reads.get(pk=pk).sync_version for pk in seeds_alone]
    assert versions[0] == versions[1]
    assert [w[3] for w in grouped["outbound"]][2:] == ["create", "create"]


def _xmin(table: str, column: str, pk: Any) -> int:
    """The id of the transaction that wrote the row (PostgreSQL's ``xmin``)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT xmin::text::bigint FROM {table} WHERE {column} = %s", [pk])
        return cursor.fetchone()[0]


def _triggered(seeds: list, main: ProcessRun) -> list:
    names = Names(seeds, main)
    return sorted(
        names.of(run.input["pgRowId"])
        for run in ProcessRun.objects.filter(process_id="t:kinds-on-approved")
    )


def test_a_watched_type_groups_and_its_watchers_run_in_the_group_transaction(
    admin_user, alice, monkeypatch
):
    """A record trigger watches ``legacy_customer``: its runs start as alone, and every watcher
    is told inside the transaction that wrote the record (the group's, its ``xmin``)."""
    told: list[tuple[str, int | None]] = []

    def spy(written: RecordWritten) -> None:
        if not written.actor.process_run_id:
            return  # a seed's write, not a step's
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_current_xact_id_if_assigned()::text::bigint")
            told.append((str(written.record.pk), cursor.fetchone()[0]))

    monkeypatch.setattr(
        watches, "_providers", [*watches._providers, lambda name: spy if _spied(name) else None]
    )
    deploy(WATCHER, by=admin_user, name="processes/watcher.ts")
    deploy(WATCHED, by=admin_user)
    run, seeds, groups = _run("t:kinds-watched", "legacy_customer", 16, alice)
    run_told = list(told)
    xmins = [_xmin("record", "pg_row_id", pk) for pk, _ in run_told]
    grouped, triggered = observed(run, seeds), _triggered(seeds, run)

    main_alone, seeds_alone, groups_alone = _run("t:kinds-watched", "legacy_customer", 1, alice)
    alone, triggered_alone = observed(main_alone, seeds_alone), _triggered(seeds_alone, main_alone)

    assert groups == 1 and groups_alone == 3
    assert len(run_told) == 3  # a, b and the update of seed 0, each told once
    assert [xid for _, xid in run_told] == xmins == [xmins[0]] * 3  # in the group's transaction
    assert triggered == triggered_alone == ["seed:0", "step:a"]  # b never entered the state
    assert _triggered_named(grouped) == _triggered_named(alone)
    started = ProcessRun.objects.filter(process_id="t:kinds-on-approved", state="committed")
    assert started.count() == 2


def _triggered_named(seen: dict) -> dict:
    """``seen`` with the ids of the triggered runs on trail rows (unnamed: not the run's own)
    replaced by one name: which run wrote them is a queue's order, not the group's doing."""
    trail = [
        t[:7] + (("triggered",) if str(t[7]).startswith("?") else (t[7],)) + t[8:]
        for t in seen["trail"]
    ]
    return {**seen, "trail": trail}


def _spied(record_type: str) -> bool:
    return record_type == "legacy_customer"


WATCHED_OWN = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:kinds-watched-own',
  input: { type: 'object' },
  steps: [
    { id: 'a', recordType: 'legacy_customer', build: (ctx) => ({ parent: { status: 'draft' } }) },
    { id: 'u', recordType: 'legacy_customer', update: { pgRowId: (ctx) => ctx.steps.a.pgRowId },
      build: (ctx) => ({ parent: { status: 'approved' } }) },
    { id: 'v', recordType: 'legacy_customer', update: { pgRowId: (ctx) => ctx.steps.a.pgRowId },
      build: (ctx) => ({ parent: { status: 'approved', note: 'again' } }) },
  ],
});
"""


def test_a_watched_record_created_and_updated_in_one_group_triggers_as_alone(admin_user, alice):
    """The updates of a record the group creates are folded into its create (``records.step_folds``):
    the watchers are still told of the create as created and of each update as it left the
    record, so the record enters the trigger's state at the first update, as alone."""
    deploy(WATCHER, by=admin_user, name="processes/watcher.ts")
    deploy(WATCHED_OWN, by=admin_user)
    run, seeds, groups = _run("t:kinds-watched-own", "legacy_customer", 16, alice)
    grouped, triggered = observed(run, seeds), _triggered(seeds, run)
    keys = sorted(
        ProcessRun.objects.filter(process_id="t:kinds-on-approved").values_list(
            "idempotency_key", flat=True
        )
    )
    main_alone, seeds_alone, groups_alone = _run("t:kinds-watched-own", "legacy_customer", 1, alice)
    alone, triggered_alone = observed(main_alone, seeds_alone), _triggered(seeds_alone, main_alone)
    keys_alone = sorted(
        ProcessRun.objects.filter(process_id="t:kinds-on-approved").values_list(
            "idempotency_key", flat=True
        )
    )

    assert (groups, groups_alone) == (1, 3)  # a, u and v in one statement; alone, three
    assert triggered == triggered_alone == ["step:a"]  # entered once, at u
    assert [k.rsplit(":", 1)[1] for k in keys] == [k.rsplit(":", 1)[1] for k in keys_alone] == ["2"]
    assert _triggered_named(grouped) == _triggered_named(alone)
