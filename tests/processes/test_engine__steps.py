"""Step semantics: groups, declines, addresses, rollback scoping, deletes, ctx.query bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from guardrails.rules import rule_set
from guardrails.settings import setting_set
from records.boundary import record_create
from records.errors import HookRejection
from records.hooks import hook_register
from records.models import Record, WriteTrail
from records.trail import Actor
from tests.processes.engine_support import deploy, invoke, ledger, pump

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).parent.parent / "extensions" / "fixtures" / "processes"


@pytest.fixture
def hooks():
    undo = []
    yield lambda **kw: undo.append(hook_register(**kw))
    for fn in undo:
        fn()


def _reject_memo(memo: str, code: str = "MEMO_REFUSED"):
    def hook(ctx):
        if ctx.record["parent"].get("memo") == memo:
            raise HookRejection(f"memo {memo!r} is not allowed", code=code, field="parent.memo")

    return hook


def _process(
    steps: str, *, pid: str = "t:p", on_failure: str = "stop", schema: str = "{ type: 'object' }"
) -> str:
    return f"""import {{ defineProcess }} from '@turbobase/extensions';
export default defineProcess({{
  id: '{pid}',
  input: {schema},
  onFailure: '{on_failure}',
  steps: [{steps}],
}});
"""


def _run(admin_user, user, source, body=None, pid="t:p"):
    deploy(source, by=admin_user)
    run = invoke(pid, body if body is not None else {}, user)
    pump()
    run.refresh_from_db()
    return run


def test_for_each_group_ledger_ids_item_index_and_update_by_step(admin_user, alice):
    run = _run(
        admin_user,
        alice,
        (FIXTURES / "legs.ts").read_text(),
        {"legs": [{"vendorId": "A"}, {"vendorId": "B"}]},
        pid="acme:legs",
    )
    assert run.state == "committed"
    assert [r[0] for r in ledger(run)] == [
        "leg:0:doc",
        "leg:0:note",
        "leg:1:doc",
        "leg:1:note",
        "close",
    ]
    first = Record.reads.get(pk=run.ledger.get(step_id="leg:0:doc").pg_row_id)
    second = Record.reads.get(pk=run.ledger.get(step_id="leg:1:doc").pg_row_id)
    assert first.fields == {"memo": "chain closed", "entity_id": "A"}
    assert second.fields == {"memo": "leg 1", "entity_id": "B"}
    assert run.ledger.get(step_id="close").pg_row_id == first.pk


def test_for_each_over_the_cap_is_refused_before_any_write(admin_user, alice):
    run = _run(
        admin_user,
        alice,
        (FIXTURES / "legs.ts").read_text(),
        {"legs": [{"vendorId": "A"}] * 101},
        pid="acme:legs",
    )
    assert run.state == "failed"
    assert "101" in run.reason and "100" in run.reason
    assert run.ledger.count() == 0
    assert Record.reads.count() == 0


def test_declined_steps_are_skipped_and_the_run_commits(admin_user, alice):
    run = _run(
        admin_user,
        alice,
        (FIXTURES / "rush-and-fee.ts").read_text(),
        {"customerId": "C1"},
        pid="acme:rush-and-fee",
    )
    assert (run.state, run.outstanding) == ("committed", 0)
    assert ledger(run) == [("rush", "skipped", None), ("fee", "skipped", None)]
    assert Record.reads.count() == 0


def test_a_throwing_when_fails_the_step_and_stops(admin_user, alice):
    steps = """
      { id: 'a', recordType: 'salesOrder',
        when: (ctx) => { throw new Error('broken condition'); }, build: () => ({ parent: {} }) },
      { id: 'b', recordType: 'salesOrder', build: () => ({ parent: { memo: 'b' } }) },"""
    run = _run(admin_user, alice, _process(steps))
    assert run.state == "failed"
    assert ledger(run) == [("a", "failed", "WHEN_FAILED"), ("b", "skipped", None)]
    assert "broken condition" in run.ledger.get(step_id="a").refusal_message
    assert Record.reads.count() == 0


def test_extra_keys_from_build_are_ignored_and_the_step_creates(admin_user, alice, alice_actor):
    existing = record_create(
        actor=alice_actor, record_type="salesOrder", parent={"memo": "old"}
    ).record
    steps = f"""{{ id: 'a', recordType: 'salesOrder',
      build: () => ({{ pgRowId: '{existing.pk}', parent: {{ memo: 'new' }} }}) }}"""
    run = _run(admin_user, alice, _process(steps))
    assert run.state == "committed"
    assert Record.reads.count() == 2
    assert Record.reads.get(pk=existing.pk).fields == {"memo": "old"}


@pytest.mark.parametrize(
    "address, what",
    [
        ("{ step: 'skipped' }", "update.step 'skipped'"),
        ("{ pgRowId: (ctx) => undefined }", "update.pgRowId"),
    ],
)
def test_unresolved_update_address_fails_and_never_creates(admin_user, alice, address, what):
    steps = f"""
      {{ id: 'skipped', recordType: 'salesOrder', when: () => false, build: () => ({{ parent: {{}} }}) }},
      {{ id: 'u', recordType: 'salesOrder', update: {address}, build: () => ({{ parent: {{ memo: 'x' }} }}) }},"""
    run = _run(admin_user, alice, _process(steps))
    assert run.state == "failed"
    row = run.ledger.get(step_id="u")
    assert (row.disposition, row.refusal_code, row.refusal_field) == (
        "failed",
        "STEP_ADDRESS_UNRESOLVED",
        what,
    )
    assert Record.reads.count() == 0


def test_update_of_a_row_the_invoker_cannot_see_is_404_and_moved_version_409(
    admin_user, alice, bob
):
    owned_by_bob = record_create(
        actor=Actor(user=bob), record_type="legacy_customer", parent={"n": 1}
    ).record
    mine = record_create(
        actor=Actor(user=alice), record_type="legacy_customer", parent={"n": 1}
    ).record
    steps = f"""
      {{ id: 'u', recordType: 'legacy_customer', update: {{ pgRowId: () => '{owned_by_bob.pk}' }},
        build: () => ({{ parent: {{ n: 2 }} }}) }},"""
    run = _run(admin_user, alice, _process(steps, pid="t:a"), pid="t:a")
    assert (run.state, ledger(run)) == ("failed", [("u", "failed", "RECORD_NOT_FOUND")])
    steps = f"""
      {{ id: 'u', recordType: 'legacy_customer',
        update: {{ pgRowId: () => '{mine.pk}', expectedSyncVersion: () => 7 }},
        build: () => ({{ parent: {{ n: 2 }} }}) }},"""
    run = _run(admin_user, alice, _process(steps, pid="t:b"), pid="t:b")
    assert (run.state, ledger(run)) == ("failed", [("u", "failed", "SYNC_VERSION_MOVED")])
    assert Record.reads.get(pk=owned_by_bob.pk).fields == {"n": 1}


def test_failure_at_a_keep_step_undoes_nothing(admin_user, alice, hooks):
    hooks(slot="before_save", record_type="salesOrder", hook=_reject_memo("stamped"))
    run = _run(
        admin_user,
        alice,
        (FIXTURES / "out-back-stamp.ts").read_text(),
        {"customerId": "C"},
        pid="acme:out-back-stamp",
    )
    assert run.state == "failed"
    assert ledger(run) == [
        ("out", "confirmed", None),
        ("back", "confirmed", None),
        ("stamp", "failed", "MEMO_REFUSED"),
    ]
    assert Record.reads.filter(sync_state="synced").count() == 2


def test_failure_at_an_undo_step_rolls_back_newest_first(admin_user, alice, hooks):
    hooks(slot="before_save", record_type="salesOrder", hook=_reject_memo("back"))
    run = _run(
        admin_user,
        alice,
        (FIXTURES / "out-back-stamp.ts").read_text(),
        {"customerId": "C"},
        pid="acme:out-back-stamp",
    )
    assert run.state == "rolled_back"
    assert ledger(run) == [
        ("out", "rolled_back", None),
        ("back", "failed", "MEMO_REFUSED"),
        ("stamp", "skipped", None),
    ]
    out = Record.reads.get(pk=run.ledger.get(step_id="out").pg_row_id)
    assert out.sync_state in ("deleting", "deleted")
    assert "back" in run.reason and "MEMO_REFUSED" in run.reason


def _drop(on_refused: str = "stop") -> str:
    return f"""
      {{ id: 'drop', recordType: 'invoice',
        delete: {{ externalId: (ctx) => ctx.input.invoiceId, sourceSystem: 'netsuite' }},
        onRefused: '{on_refused}' }},
      {{ id: 'after', recordType: 'legacy_customer', build: () => ({{ parent: {{ done: true }} }}) }},"""


def _synced_invoice(actor) -> Record:
    record = record_create(
        actor=actor, record_type="invoice", parent={"entity_id": "E"}, lines=[{"item": "i"}]
    ).record
    pump(sources=True)
    record.refresh_from_db()
    assert record.external_id
    return record


def test_a_held_delete_is_confirmed_with_awaiting_confirmation(admin_user, alice, alice_actor):
    invoice = _synced_invoice(alice_actor)
    run = _run(admin_user, alice, _process(_drop()), {"invoiceId": invoice.external_id})
    assert run.state == "committed"
    drop = run.ledger.get(step_id="drop")
    assert (drop.disposition, drop.refusal_code) == ("confirmed", "SOURCE_AWAITING_CONFIRMATION")
    assert drop.external_id == invoice.external_id
    invoice.refresh_from_db()
    assert invoice.sync_state == "delete_held"


def test_held_deletes_and_the_write_trail_name_the_run_and_its_step(
    admin_user, admin_api, alice, alice_actor
):
    invoice = _synced_invoice(alice_actor)
    run = _run(admin_user, alice, _process(_drop()), {"invoiceId": invoice.external_id})
    [held] = admin_api.get("/v1/guardrails/held-deletes").json()["heldDeletes"]
    assert (held["pgRowId"], held["processRunId"], held["processStep"]) == (
        str(invoice.pk),
        str(run.pk),
        "drop",
    )
    trail = WriteTrail.reads.filter(process_run_id=str(run.pk)).order_by("id")
    assert list(trail.values_list("record_type", "process_step")) == [
        ("invoice", "drop"),
        ("legacy_customer", "after"),
    ]


def test_allow_with_audit_removes_the_hold(admin_user, alice, alice_actor):
    rule_set(record_type="invoice", action="delete", decision="allow_with_audit")
    invoice = _synced_invoice(alice_actor)
    run = _run(admin_user, alice, _process(_drop()), {"invoiceId": invoice.external_id})
    assert ledger(run)[0] == ("drop", "confirmed", None)
    invoice.refresh_from_db()
    assert invoice.sync_state == "deleted"


@pytest.mark.parametrize(
    "on_refused, state, after",
    [("continue", "committed", "confirmed"), ("stop", "failed", "skipped")],
)
def test_on_refused_decides_whether_a_refused_delete_ends_the_run(
    admin_user, alice, alice_actor, hooks, on_refused, state, after
):
    def refuse(ctx):
        raise HookRejection("invoices are kept", code="KEEP_INVOICES", field=None)

    hooks(slot="before_delete", record_type="invoice", hook=refuse)
    invoice = _synced_invoice(alice_actor)
    run = _run(admin_user, alice, _process(_drop(on_refused)), {"invoiceId": invoice.external_id})
    assert run.state == state
    assert ledger(run) == [("drop", "failed", "KEEP_INVOICES"), ("after", after, None)]
    invoice.refresh_from_db()
    assert invoice.sync_state == "synced"


@pytest.mark.parametrize(
    "on_refused, state, after",
    [("continue", "committed", "confirmed"), ("stop", "failed", "skipped")],
)
def test_a_delete_the_connected_system_refuses_fails_the_step_and_the_record_comes_back(
    admin_user, alice, alice_actor, on_refused, state, after
):
    rule_set(record_type="invoice", action="delete", decision="allow_with_audit")  # sent, not held
    invoice = _synced_invoice(alice_actor)
    record_create(
        actor=alice_actor, record_type="creditMemo", parent={"created_from_id": invoice.external_id}
    )
    pump(sources=True)
    run = _run(admin_user, alice, _process(_drop(on_refused)), {"invoiceId": invoice.external_id})
    assert run.state == state
    assert ledger(run) == [("drop", "failed", "RECORD_REFERENCED"), ("after", after, None)]
    drop = run.ledger.get(step_id="drop")
    assert drop.refusal_message.startswith(
        f"invoice {invoice.external_id} cannot be deleted: creditMemo"
    )
    assert (drop.pg_row_id, drop.awaiting_verdict) == (invoice.pk, False)
    if on_refused == "stop":
        assert "step 'drop' failed: RECORD_REFERENCED" in run.reason
    invoice.refresh_from_db()
    assert invoice.sync_state == "synced"  # un-hidden: the source kept it


def test_delete_address_that_resolves_to_nothing(admin_user, alice):
    run = _run(admin_user, alice, _process(_drop()), {})
    assert ledger(run) == [
        ("drop", "failed", "STEP_ADDRESS_UNRESOLVED"),
        ("after", "skipped", None),
    ]


def test_delete_cap_wait_running_out_stops_committed_with_the_cap_named(
    admin_user, alice, alice_actor
):
    rule_set(record_type="invoice", action="delete", decision="allow")
    setting_set("guardrails.max_deletes_per_min", 0)
    setting_set("processes.delete_wait_budget_ms", 1)
    invoice = _synced_invoice(alice_actor)
    run = _run(admin_user, alice, _process(_drop()), {"invoiceId": invoice.external_id})
    assert (run.state, run.outstanding) == ("committed", 2)
    assert "guardrails.max_deletes_per_min" in run.reason
    assert ledger(run) == [("drop", "skipped", None), ("after", "skipped", None)]
    invoice.refresh_from_db()
    assert invoice.sync_state == "synced"


def test_ctx_query_byte_ceiling_fails_the_step_by_name(admin_user, alice, alice_actor):
    for n in range(20):
        record_create(
            actor=alice_actor, record_type="customer", parent={"company_name": f"Company {n}"}
        )
    setting_set("processes.query_max_bytes", 200)
    steps = """{ id: 'q', recordType: 'legacy_customer', build: async (ctx) => {
        const rows = await ctx.query('customer?select=company_name');
        return { parent: { n: rows.length } };
    } }"""
    run = _run(admin_user, alice, _process(steps))
    row = run.ledger.get(step_id="q")
    assert (run.state, row.refusal_code) == ("failed", "READ_BYTE_CEILING")
    assert "200 bytes" in row.refusal_message


def test_ctx_query_reads_as_the_invoker_and_refuses_rpc(admin_user, alice, bob):
    record_create(actor=Actor(user=bob), record_type="legacy_customer", parent={"name": "bob's"})
    record_create(
        actor=Actor(user=alice), record_type="legacy_customer", parent={"name": "alice's"}
    )
    steps = """{ id: 'q', recordType: 'legacy_customer', build: async (ctx) => {
        const rows = await ctx.query('legacy_customer?select=name');
        return { parent: { custom: rows.map((r) => r.name) } };
    } }"""
    run = _run(admin_user, alice, _process(steps, pid="t:q"), pid="t:q")
    created = Record.reads.get(pk=run.ledger.get(step_id="q").pg_row_id)
    assert created.fields == {"custom": ["alice's"]}
    steps = """{ id: 'q', recordType: 'legacy_customer',
      build: async (ctx) => ({ parent: { custom: await ctx.query('rpc/drop_everything') } }) }"""
    run = _run(admin_user, alice, _process(steps, pid="t:r"), pid="t:r")
    assert run.ledger.get(step_id="q").refusal_code == "RPC_NOT_SUPPORTED"


def test_ctx_query_of_an_unknown_resource_fails_the_step_with_the_reads_own_cause(
    admin_user, alice, alice_api
):
    """Before: the step failed 'Error: ctx.query failed' — the author could not tell why."""
    steps = """{ id: 'q', recordType: 'legacy_customer', build: async (ctx) => {
        const rows = await ctx.query('nope?select=name');
        return { parent: { n: rows.length } };
    } }"""
    run = _run(admin_user, alice, _process(steps))
    read = alice_api.get("/v1/rest/nope?select=name")  # the same read, as the same user
    assert (read.status_code, read.json()["error"]) == (404, "record_type_not_found")
    body = alice_api.get(f"/v1/processes/runs/{run.pk}").json()
    assert (body["run"]["state"], body["run"]["reason"]) == (
        "failed",
        "step 'q' failed: record_type_not_found: record type 'nope' is not in the catalog",
    )
    assert body["steps"][0]["refusal"] == {
        "code": "record_type_not_found",
        "field": None,
        "message": "record type 'nope' is not in the catalog",
    }


def test_a_step_that_catches_a_failed_ctx_query_sees_its_cause(admin_user, alice):
    steps = """{ id: 'q', recordType: 'legacy_customer', build: async (ctx) => {
        try { await ctx.query('nope?select=name'); } catch (e) { return { parent: { note: e.message } }; }
        return null;
    } }"""
    run = _run(admin_user, alice, _process(steps))
    assert run.state == "committed"
    created = Record.reads.get(pk=run.ledger.get(step_id="q").pg_row_id)
    assert created.fields == {"note": "record type 'nope' is not in the catalog"}


def test_ctx_query_is_refused_once_the_invokers_access_changes(admin_user, alice):
    from django.contrib.auth.models import Group

    steps = """{ id: 'q', recordType: 'legacy_customer',
      build: async (ctx) => ({ parent: { n: (await ctx.query('customer?select=pg_row_id')).length } }) }"""
    deploy(_process(steps), by=admin_user)
    run = invoke("t:p", {}, alice)
    alice.groups.add(Group.objects.create(name="promoted"))
    pump()
    run.refresh_from_db()
    assert run.ledger.get(step_id="q").refusal_code == "QUERY_ACCESS_CHANGED"
