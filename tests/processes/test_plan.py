"""``POST /v1/processes/<id>/plan``: a run's writes shown before it writes — through the real
engine, hooks and guardrails — and nothing at all kept: no run, record, trail row, ledger row,
held delete, audit row or queued task. What cannot be known is listed, never guessed."""

from __future__ import annotations

import pytest
from django_q.models import OrmQ

from extensions.deploy import extension_deploy
from guardrails.models import HeldDelete
from guardrails.rules import rule_set
from guardrails.settings import setting_get, setting_set
from kernel.audit import AuditEvent
from kernel.models import token_issue
from processes.models import ProcessRun, ProcessRunStep
from records.boundary import record_create
from records.models import Record, RecordWriteState, WriteTrail
from records.trail import Actor
from tests.conftest import cli
from tests.processes.engine_support import deploy
from tests.processes.sleep_support import sleeper

pytestmark = pytest.mark.django_db


def _plan(api, process_id: str, body=None, **query):
    suffix = "?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else ""
    return api.post(f"/v1/processes/{process_id}/plan{suffix}", body or {}, format="json")


def _kept() -> tuple[int, ...]:
    """Everything a plan must leave as it found it."""
    return (
        ProcessRun.objects.count(),
        ProcessRunStep.objects.count(),
        Record.reads.count(),
        WriteTrail.reads.count(),
        RecordWriteState.reads.count(),
        HeldDelete.objects.count(),
        AuditEvent.objects.count(),
        OrmQ.objects.count(),
    )


ONBOARD = """\
import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'acme:onboard',
  input: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  steps: [
    { id: 'note', recordType: 'legacy_customer', build: (ctx) => ({ parent: { company_name: ctx.input.name } }) },
    { id: 'seen', recordType: 'legacy_customer',
      build: async (ctx) => {
        const rows = await ctx.query('legacy_customer?select=pg_row_id');
        return { parent: { company_name: 'count ' + rows.length } };
      } },
    { id: 'stamp', recordType: 'legacy_customer', update: { pgRowId: (ctx) => ctx.steps.note.pgRowId },
      build: () => ({ parent: { status: 'stamped' } }) },
    { id: 'never', recordType: 'legacy_customer', when: () => false, build: () => ({ parent: {} }) },
  ],
});
"""


def test_a_plan_shows_each_write_and_keeps_nothing(admin_user, admin_api):
    deploy(ONBOARD, by=admin_user)
    before = _kept()
    response = _plan(admin_api, "acme:onboard", {"name": "Acme"})
    assert response.status_code == 200, response.content
    plan = response.json()
    assert _kept() == before
    assert (plan["processId"], plan["refusals"], plan["unknowns"]) == ("acme:onboard", [], [])
    assert [(s["stepId"], s["kind"], s["action"]) for s in plan["steps"]] == [
        ("note", "create", "create"),
        ("seen", "create", "create"),
        ("stamp", "update", "update"),
        ("never", "create", "skip"),
    ]
    note, seen, stamp, never = plan["steps"]
    assert note["record"] == {"parent": {"company_name": "Acme"}, "lines": []}
    assert seen["record"]["parent"] == {"company_name": "count 1"}  # a read sees the plan's writes
    assert stamp["record"] == {"parent": {"status": "stamped"}}  # what the update changes
    assert (never["record"], never["guardrail"], never["hook"]) == (None, None, None)


REQUIRE_MEMO = """\
import { defineHook } from '@turbobase/extensions';
export default defineHook({
  id: 'acme:require-memo',
  recordType: 'customer',
  on: 'before_save',
  run(ctx) {
    if (!ctx.record.parent.memo) {
      return { reject: { code: 'MEMO_REQUIRED', field: 'parent.memo', message: 'a memo is required' } };
    }
    return undefined;
  },
});
"""

HOOKED = """\
import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'acme:hooked',
  input: { type: 'object' },
  steps: [
    { id: 'bare', recordType: 'customer', build: () => ({ parent: { company_name: 'A' } }) },
  ],
});
"""


def test_a_hook_that_would_refuse_is_shown_and_nothing_is_trailed(admin_user, admin_api):
    extension_deploy(entry="hooks/memo.ts", files={"hooks/memo.ts": REQUIRE_MEMO}, by=admin_user)
    deploy(HOOKED, by=admin_user)
    before = _kept()
    plan = _plan(admin_api, "acme:hooked").json()
    assert _kept() == before  # not even the refusal's trail row
    (bare,) = plan["steps"]
    assert (bare["action"], bare["hook"]) == (
        "skip",
        {"decision": "refuse", "code": "MEMO_REQUIRED", "message": "a memo is required"},
    )
    assert plan["refusals"] == [
        {
            "stepId": "bare",
            "code": "MEMO_REQUIRED",
            "field": "parent.memo",
            "message": "a memo is required",
        }
    ]


DELETES = """\
import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'acme:purge',
  input: { type: 'object', properties: { id: { type: 'string' } } },
  steps: [
    { id: 'drop', recordType: 'customer', delete: { pgRowId: (ctx) => ctx.input.id } },
    { id: 'after', recordType: 'legacy_customer', build: () => ({ parent: { company_name: 'x' } }) },
  ],
});
"""


def test_a_held_delete_shows_hold(admin_user, admin_api):
    customer = record_create(
        actor=Actor(user=admin_user), record_type="customer", parent={"company_name": "Gone"}
    ).record
    deploy(DELETES, by=admin_user)
    before = _kept()
    plan = _plan(admin_api, "acme:purge", {"id": str(customer.pk)}).json()
    assert _kept() == before
    assert Record.reads.get(pk=customer.pk).sync_state == customer.sync_state
    drop, after = plan["steps"]
    assert (drop["kind"], drop["action"], drop["guardrail"]) == (
        "delete",
        "delete",
        {
            "rule": "customer.delete",
            "decision": "hold",
            "message": "the delete would be held for an operator's approval",
        },
    )
    assert (after["action"], plan["refusals"], plan["unknowns"]) == ("create", [], [])


@pytest.mark.parametrize(
    ("budget_ms", "action", "after"),
    [(300_000, "wait", None), (0, "skip", "skip")],
    ids=["waits-for-the-window", "window-frees-too-late"],
)
def test_a_delete_inside_a_full_delete_window_shows_window(
    admin_user, admin_api, budget_ms, action, after
):
    customer = record_create(
        actor=Actor(user=admin_user), record_type="customer", parent={"company_name": "Gone"}
    ).record
    rule_set(record_type="customer", action="delete", decision="allow")
    setting_set("guardrails.max_deletes_per_min", 0)  # the minute's window is full
    setting_set("processes.delete_wait_budget_ms", budget_ms)
    deploy(DELETES, by=admin_user)
    before = _kept()
    plan = _plan(admin_api, "acme:purge", {"id": str(customer.pk)}).json()
    assert _kept() == before
    drop = plan["steps"][0]
    assert (drop["stepId"], drop["kind"], drop["recordType"], drop["action"]) == (
        "drop",
        "delete",
        "customer",
        action,
    )
    assert drop["guardrail"]["rule"] == "guardrails.max_deletes_per_min"
    assert drop["guardrail"]["decision"] == "window"
    assert drop["guardrail"]["message"]
    assert [s["action"] for s in plan["steps"][1:]] == ([after] if after else [])
    assert Record.reads.filter(pk=customer.pk).exists()


AWAITED = """\
import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'acme:awaited',
  input: { type: 'object' },
  steps: [
    { id: 'po', recordType: 'purchaseOrder', awaitSource: true,
      build: () => ({ parent: { entity_id: 'V-1', memo: 'm' } }) },
    { id: 'bill', recordType: 'vendorBill',
      build: (ctx) => ({ parent: { entity_id: 'V-1', created_from_id: ctx.steps.po.externalId } }) },
  ],
});
"""


def test_a_sources_verdict_is_unknown_and_a_later_step_shows_the_id_as_a_placeholder(
    admin_user, admin_api
):
    deploy(AWAITED, by=admin_user)
    before = _kept()
    plan = _plan(admin_api, "acme:awaited").json()
    assert _kept() == before
    po, bill = plan["steps"]
    assert (po["action"], po["record"]) == (
        "wait",
        {"parent": {"entity_id": "V-1", "memo": "m"}, "lines": []},
    )
    assert (bill["action"], bill["record"]) == (
        "create",
        {
            "parent": {"entity_id": "V-1", "created_from_id": {"$unknown": "po.externalId"}},
            "lines": [],
        },
    )
    assert plan["unknowns"] == [
        {"stepId": "po", "why": "the source's verdict and the id it mints"},
    ]


MINTED = """\
import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'acme:minted',
  input: { type: 'object' },
  steps: [
    { id: 'so', recordType: 'salesOrder', build: () => ({ parent: { memo: 'first' } }) },
    { id: 'pair', recordType: 'salesOrder',
      build: (ctx) => ({ parent: { memo: 'second', paired_with_id: ctx.steps.so.externalId,
                                   pair_of: ctx.steps.so.pgRowId } }) },
    { id: 'note', recordType: 'legacy_customer',
      build: (ctx) => ({ parent: { company_name: 'n' } }) },
  ],
});
"""


def test_an_id_the_source_has_not_minted_is_a_placeholder_where_a_later_step_uses_it(
    admin_user, admin_api
):
    deploy(MINTED, by=admin_user)
    before = _kept()
    plan = _plan(admin_api, "acme:minted").json()
    assert _kept() == before
    so, pair, note = plan["steps"]
    assert [s["action"] for s in plan["steps"]] == ["create", "create", "create"]
    parent = pair["record"]["parent"]
    assert parent["paired_with_id"] == {"$unknown": "so.externalId"}
    assert isinstance(parent["pair_of"], str)  # a pgRowId is known before writing
    assert note["record"]["parent"] == {"company_name": "n"}
    assert plan["unknowns"] == [
        {"stepId": "so", "why": "the id the source mints (so.externalId)"},
    ]


def test_a_sleep_is_unknown_and_so_is_everything_after_it(admin_user, admin_api):
    deploy(sleeper("t:nap", sleep="'30d'"), by=admin_user)
    plan = _plan(admin_api, "t:nap", {"memo": "m"}).json()
    assert plan["steps"] == []
    assert [(u["stepId"], u["why"].split(":")[0]) for u in plan["unknowns"]] == [
        ("nap", "a sleep or a delete window"),
        ("after", "after nap, which waits for a sleep or a delete window"),
    ]


MIGRATION = """\
import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:migrate',
  input: { type: 'object' },
  eachRow: {
    outstanding: () => 'migration_item?select=pg_row_id,legacy_id,company_name&status=eq.pending&order=legacy_id',
    key: 'legacy_id',
  },
  steps: [
    { id: 'create', recordType: 'legacy_customer',
      build: (ctx) => ({ parent: { company_name: ctx.row!.company_name } }) },
    { id: 'mark', recordType: 'migration_item', update: { pgRowId: (ctx) => ctx.row!.pg_row_id as string },
      build: () => ({ parent: { status: 'sent' } }) },
  ],
});
"""


def test_a_migration_plans_its_first_rows_and_says_how_many_are_left(admin_user, alice, alice_api):
    for n in range(30):
        record_create(
            actor=Actor(user=alice),
            record_type="migration_item",
            parent={"legacy_id": f"L{n:03d}", "company_name": f"C{n}", "status": "pending"},
        )
    deploy(MIGRATION, by=admin_user)
    before = _kept()
    plan = _plan(alice_api, "t:migrate", rows=5).json()
    assert _kept() == before
    assert setting_get("processes.slice_max_rows") == 500  # the plan's 5 was never stored
    assert [(s["stepId"], s["key"]) for s in plan["steps"]][:4] == [
        ("create", "L000"),
        ("mark", "L000"),
        ("create", "L001"),
        ("mark", "L001"),
    ]
    assert len(plan["steps"]) == 10
    assert plan["rowsOutstanding"] == 25  # rows the outstanding read listed beyond these
    default = _plan(alice_api, "t:migrate").json()
    assert len(default["steps"]) == 40  # 20 rows by default


@pytest.mark.parametrize(
    ("path", "body", "status", "error"),
    [
        ("acme:onboard", {}, 400, "invalid_input"),  # the input schema refuses it, as an invoke
        ("acme:none", {"name": "x"}, 404, "process_not_found"),
        ("acme:onboard?rows=0", {"name": "x"}, 400, "invalid_request"),
    ],
)
def test_a_plan_is_refused_as_an_invoke_is(admin_user, admin_api, path, body, status, error):
    deploy(ONBOARD, by=admin_user)
    process_id, _, query = path.partition("?")
    plan_path = f"/v1/processes/{process_id}/plan" + (f"?{query}" if query else "")
    response = admin_api.post(plan_path, body, format="json")
    assert (response.status_code, response.json()["error"]) == (status, error)


def test_a_switched_off_process_is_not_planned(admin_user, admin_api):
    deploy(ONBOARD, by=admin_user)
    setting_set("processes.enabled", 0)
    response = _plan(admin_api, "acme:onboard", {"name": "x"})
    assert (response.status_code, response.json()["error"]) == (409, "process_disabled")


def test_the_cli_plans_with_invoke_plan(admin_user, live_server, monkeypatch, capsys):
    deploy(ONBOARD, by=admin_user)
    _, raw = token_issue(user=admin_user, scopes=["extensions:deploy"])
    monkeypatch.setenv("TURBOBASE_URL", live_server.url + "/")
    monkeypatch.setenv("TURBOBASE_TOKEN", raw)
    before = _kept()
    code, out, err = cli(
        capsys, "processes", "invoke", "acme:onboard", "--input", '{"name": "A"}', "--plan"
    )
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == [
        "acme:onboard v1: a plan, nothing written",
        '  note  create legacy_customer  {"company_name": "A"}',
    ]
    assert _kept() == before


def test_an_ai_provider_is_never_asked_while_planning(admin_user, admin_api, monkeypatch):
    from processes.ai import local
    from tests.processes.test_engine__ai_step import CLASSIFY

    asked: list[str] = []
    monkeypatch.setattr(local.LocalProvider, "answer", lambda self, **kw: asked.append("asked"))
    deploy(CLASSIFY, by=admin_user)
    before = _kept()
    plan = _plan(admin_api, "acme:classify-customer", {"name": "Acme"}).json()
    assert (_kept(), asked, plan["steps"]) == (before, [], [])
    assert [u["stepId"] for u in plan["unknowns"]] == ["classify", "customer"]
    assert plan["unknowns"][0]["why"].startswith("an AI step's answer")


def test_the_process_page_plans_a_run_as_a_table(admin_user, operator):
    deploy(ONBOARD, by=admin_user)
    page = operator.get("/admin/processes/process/acme:onboard/change/")
    assert 'href="/admin/processes/process/acme:onboard/plan/"' in page.content.decode()
    before = _kept()
    planned = operator.post(
        "/admin/processes/process/acme:onboard/plan/", {"input": '{"name": "Acme"}'}
    )
    html = planned.content.decode()
    assert planned.status_code == 200
    assert html.count('class="plan-create"') == 2 and html.count('class="plan-update"') == 1
    assert _kept() == before
    refused = operator.post("/admin/processes/process/acme:onboard/plan/", {"input": "{}"})
    assert "invalid_input" in refused.content.decode()
    assert (
        operator.post("/admin/processes/process/acme:onboard/plan/", {"input": "{"}).status_code
        == 200
    )
