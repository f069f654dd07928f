"""Record triggers: ``trigger: { record, enters }`` starts one run per transition into the state,
after the write commits, as the writer, with ``{recordType, pgRowId, externalId, record}``.

Writes go through HTTP (``/v1/data``); the runs are performed inline (``drain_runs``). Real
workers: ``test_triggers_workers.py``."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from guardrails.settings import setting_set
from processes.invoke import run_start
from processes.models import Process, ProcessRun
from processes.triggers.record_entered import record_watcher
from records.boundary import record_update
from records.models import Record
from records.trail import Actor
from tests.concurrency import race
from tests.processes.conftest import drain_runs

pytestmark = pytest.mark.django_db

ON_APPROVED = """\
import { defineProcess } from '@turbobase/extensions';

export default defineProcess({
  id: 'acme:on-approved',
  trigger: { record: 'salesOrder', enters: { status: 'approved' } },
  input: { type: 'object', required: ['pgRowId', 'record'] },
  steps: [{
    id: 'note',
    recordType: 'legacy_customer',
    build: (ctx) => ({ parent: { name: 'approved: ' + ctx.input.record.memo, note: ctx.input.pgRowId } }),
  }],
});
"""
DATA = "/v1/data/salesOrder"


@pytest.fixture
def on_approved(deploy) -> str:
    return deploy(ON_APPROVED, "on-approved.ts").id


def order(api, **parent) -> str:
    res = api.post(DATA, {"parent": {"memo": "m", **parent}}, format="json")
    assert res.status_code == 201, res.json()
    return res.json()["pgRowId"]


def change(api, pg_row_id: str, **parent) -> None:
    res = api.patch(DATA, {"pgRowId": pg_row_id, "parent": parent}, format="json")
    assert res.status_code == 200, res.json()


def runs() -> list[ProcessRun]:
    return list(ProcessRun.objects.filter(process_id="acme:on-approved").order_by("created_at"))


def test_an_update_entering_the_state_starts_one_run_as_the_writer_with_the_record(
    on_approved, alice, alice_api
):
    pg_row_id = order(alice_api, status="pendingApproval")
    assert runs() == []  # created outside the state
    change(alice_api, pg_row_id, status="approved", tranid="SO-7")
    [run] = runs()
    assert (run.state, run.invoked_by, run.mode) == ("queued", alice, "async")
    assert run.input == {
        "recordType": "salesOrder",
        "pgRowId": pg_row_id,
        "externalId": None,
        "record": {"memo": "m", "status": "approved", "tranid": "SO-7"},
    }
    drain_runs()
    read = alice_api.get(f"/v1/processes/runs/{run.run_id}").json()
    assert (read["run"]["state"], read["run"]["invokedBy"]) == ("committed", "alice")
    made = Record.reads.get(record_type="legacy_customer")
    assert (made.fields, made.owner) == ({"name": "approved: m", "note": pg_row_id}, alice)


def test_a_create_already_in_the_state_starts_one_run(on_approved, alice_api):
    pg_row_id = order(alice_api, status="approved")
    [run] = runs()
    assert run.input["pgRowId"] == pg_row_id
    assert run.idempotency_key == f"record:acme:on-approved:{pg_row_id}:1"


def test_a_write_that_keeps_the_state_starts_nothing_and_leaving_and_entering_again_starts_another(
    on_approved, alice_api
):
    pg_row_id = order(alice_api, status="approved")
    change(alice_api, pg_row_id, memo="still approved")
    change(alice_api, pg_row_id, status="approved")  # the same value again: no transition
    assert len(runs()) == 1
    change(alice_api, pg_row_id, status="onHold")
    assert len(runs()) == 1
    change(alice_api, pg_row_id, status="approved")
    first, second = runs()
    assert (first.input["record"]["memo"], second.input["record"]["memo"]) == (
        "m",
        "still approved",
    )
    assert second.idempotency_key == f"record:acme:on-approved:{pg_row_id}:5"


def test_other_record_types_and_other_values_start_nothing(on_approved, alice_api):
    order(alice_api, status="Approved")  # not equal
    order(alice_api)
    res = alice_api.post(
        "/v1/data/legacy_customer", {"parent": {"status": "approved"}}, format="json"
    )
    assert res.status_code == 201
    assert runs() == []


def test_a_write_that_rolls_back_starts_nothing(on_approved, alice, alice_api):
    pg_row_id = order(alice_api, status="pendingApproval")

    class Abandon(Exception):
        pass

    with pytest.raises(Abandon), transaction.atomic():
        record_update(
            actor=Actor(user=alice),
            record_type="salesOrder",
            pg_row_id=pg_row_id,
            parent={"status": "approved"},
        )
        assert len(runs()) == 1  # in the write's transaction, and rolled back with it
        raise Abandon
    assert runs() == []
    assert Record.reads.get(pg_row_id=pg_row_id).fields["status"] == "pendingApproval"


def test_the_same_transition_started_twice_is_one_run(on_approved, alice, alice_api):
    pg_row_id = order(alice_api, status="approved")
    [run] = runs()
    again = run_start(
        process_id="acme:on-approved", body={}, user=alice, idempotency_key=run.idempotency_key
    )
    assert again.run_id == run.run_id
    assert len(runs()) == 1
    assert run.input["pgRowId"] == pg_row_id


def test_a_triggered_run_whose_input_the_schema_refuses_is_refused_naming_the_field(
    deploy, alice_api
):
    deploy(
        ON_APPROVED.replace(
            "input: { type: 'object', required: ['pgRowId', 'record'] }",
            "input: { type: 'object', required: ['customerId'] }",
        ),
        "on-approved.ts",
    )
    pg_row_id = order(alice_api, status="approved")
    [run] = runs()
    assert (run.state, run.refusal_code, run.refusal_field, run.reason) == (
        "refused",
        "INPUT_INVALID",
        "input.customerId",
        "input.customerId: 'customerId' is a required property",
    )
    assert drain_runs() == 0
    # The write itself went through.
    assert Record.reads.get(pg_row_id=pg_row_id).fields["status"] == "approved"


@pytest.mark.parametrize("switch", ["process", "instance"])
def test_a_transition_while_switched_off_is_a_refused_run_naming_the_switch(
    on_approved, alice_api, admin_api, switch
):
    if switch == "process":
        Process.objects.filter(pk="acme:on-approved").update(
            is_enabled=False, disabled_reason="audit week"
        )
    else:
        setting_set("processes.enabled", 0)
    order(alice_api, status="approved")
    [run] = runs()
    field = "acme:on-approved.enabled" if switch == "process" else "processes.enabled"
    read = admin_api.get(f"/v1/processes/runs/{run.run_id}").json()["run"]
    assert (read["state"], read["refusal"]["code"], read["refusal"]["field"]) == (
        "refused",
        "PROCESS_DISABLED",
        field,
    )
    assert drain_runs() == 0


def test_a_process_step_that_makes_the_transition_starts_a_run_as_the_runs_invoker(
    deploy, on_approved, alice, alice_api
):
    deploy(
        """\
import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'acme:approve',
  input: { type: 'object', required: ['pgRowId'] },
  steps: [{
    id: 'approve',
    recordType: 'salesOrder',
    update: { pgRowId: (ctx) => ctx.input.pgRowId },
    build: () => ({ parent: { status: 'approved' } }),
  }],
});
""",
        "approve.ts",
    )
    pg_row_id = order(alice_api, status="pendingApproval")
    res = alice_api.post("/v1/processes/acme:approve", {"pgRowId": pg_row_id}, format="json")
    assert res.status_code == 202
    drain_runs()
    [run] = runs()
    assert (run.state, run.invoked_by, run.input["pgRowId"]) == ("committed", alice, pg_row_id)


SELF_REENTERING = """\
import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'acme:reapprove',
  trigger: { record: 'salesOrder', enters: { status: 'approved' } },
  input: { type: 'object', required: ['pgRowId'] },
  steps: [
    { id: 'reopen', recordType: 'salesOrder', update: { pgRowId: (ctx) => ctx.input.pgRowId },
      build: () => ({ parent: { status: 'pendingApproval' } }) },
    { id: 'approve', recordType: 'salesOrder', update: { pgRowId: (ctx) => ctx.input.pgRowId },
      build: () => ({ parent: { status: 'approved' } }) },
  ],
});
"""


def test_a_runs_own_write_never_starts_its_own_process_again_but_starts_the_others(
    deploy, on_approved, alice_api
):
    deploy(SELF_REENTERING, "reapprove.ts")
    order(alice_api, status="approved")  # one run of each watcher
    drain_runs()  # until no run is due: a loop would run 50 rounds of reapprove
    by_process = sorted(ProcessRun.objects.values_list("process_id", "state"))
    # reapprove's run left and re-entered the state: on-approved starts again, reapprove does not.
    assert by_process == [
        ("acme:on-approved", "committed"),
        ("acme:on-approved", "committed"),
        ("acme:reapprove", "committed"),
    ]


def test_a_type_nobody_watches_costs_the_boundary_no_query(on_approved):
    assert record_watcher("salesOrder") is not None  # the index is read (and kept)
    with CaptureQueriesContext(connection) as queries:
        for _ in range(100):
            assert record_watcher("legacy_customer") is None
            assert record_watcher("salesOrder") is not None
    assert len(queries) == 0


@pytest.mark.django_db(transaction=True)
def test_concurrent_writes_making_one_transition_start_exactly_one_run(on_approved, alice):
    actor = Actor(user=alice)
    pg_row_id = order_direct(actor)

    def approve(i: int) -> None:
        record_update(
            actor=actor,
            record_type="salesOrder",
            pg_row_id=pg_row_id,
            parent={"status": "approved", "memo": f"writer {i}"},
        )

    results = race(6, approve)
    assert [r for r in results if isinstance(r, Exception)] == []
    # Six writes, one transition (each later write saw the record already approved).
    assert len(runs()) == 1
    assert Record.reads.get(pg_row_id=pg_row_id).sync_version == 7


def order_direct(actor: Actor) -> str:
    from records.boundary import record_create

    return str(
        record_create(
            actor=actor,
            record_type="salesOrder",
            parent={"memo": "m", "status": "pendingApproval"},
        ).record.pg_row_id
    )


@pytest.mark.parametrize(
    ("trigger", "field", "message"),
    [
        (
            "{ record: 'noSuchType', enters: { status: 'approved' } }",
            "trigger.record",
            "'noSuchType' is not a record type the write boundary accepts",
        ),
        ("{ record: 'salesOrder', enters: 'approved' }", "trigger.enters", "must be an object"),
        ("{ record: 'salesOrder', enters: {} }", "trigger.enters", "must be an object"),
        ("{ record: 'salesOrder' }", "trigger.enters", "is required with record"),
        (
            "{ record: 'salesOrder', enters: { colour: 'red' } }",
            "trigger.enters.colour",
            "is not a field of salesOrder",
        ),
        (
            "{ record: 'salesOrder', enters: { status: ['a'] } }",
            "trigger.enters.status",
            "must be a string, number, boolean or null",
        ),
        (
            "{ record: 'salesOrder', enters: { status: () => 'a' } }",
            "trigger.enters.status",
            "must be a value, not a function",
        ),
        ("{ event: 'lead created' }", "trigger.event", "'lead created' is not an event name"),
        ("{ event: '.created' }", "trigger.event", "'.created' is not an event name"),
        ("{ event: 7 }", "trigger.event", "7 is not an event name"),
        (
            "{ event: 'lead.created', enters: { status: 'a' } }",
            "trigger.enters",
            "is for record triggers only",
        ),
        (
            "{ event: 'lead.created', record: 'salesOrder' }",
            "trigger",
            "must name exactly one of record or event",
        ),
        ("{ cron: '0 2 * * *' }", "trigger.cron", "is not a key of trigger"),
        ("'lead.created'", "trigger", "must be an object"),
    ],
)
def test_a_trigger_of_the_wrong_shape_is_refused_at_deploy_naming_the_field(
    admin_api, trigger, field, message
):
    source = ON_APPROVED.replace(
        "trigger: { record: 'salesOrder', enters: { status: 'approved' } }", f"trigger: {trigger}"
    )
    entry = "processes/on-approved.ts"
    res = admin_api.post(
        "/v1/extensions", {"entry": entry, "files": {entry: source}}, format="json"
    )
    assert res.status_code == 400, res.content
    rejection = res.json()["rejection"]
    assert (rejection["code"], rejection["field"]) == ("PROCESS_CONTRACT_INVALID", field)
    assert rejection["message"].startswith(f"{field}: {message}"), rejection["message"]
    assert not Process.objects.filter(pk="acme:on-approved").exists()


ON_LEAD = ON_APPROVED.replace("acme:on-approved", "acme:on-lead").replace(
    "trigger: { record: 'salesOrder', enters: { status: 'approved' } }",
    "trigger: { event: 'lead.created' }",
)


def test_the_process_list_and_the_admin_screen_show_each_trigger(
    deploy, on_approved, alice_api, operator
):
    deploy(ON_LEAD, "on-lead.ts")
    listed = {p["id"]: p for p in alice_api.get("/v1/processes").json()["processes"]}
    assert (listed["acme:on-approved"]["trigger"], listed["acme:on-approved"]["triggers"]) == (
        {"kind": "record", "record": "salesOrder", "enters": {"status": "approved"}},
        [{"kind": "record", "record": "salesOrder", "enters": {"status": "approved"}}],
    )
    assert listed["acme:on-lead"]["triggers"] == [{"kind": "event", "event": "lead.created"}]
    page = operator.get("/admin/processes/process/").content.decode()
    assert (
        '<li class="trigger-record">when a <code>salesOrder</code> enters '
        "<code>status = &quot;approved&quot;</code></li>"
    ) in page
    assert '<li class="trigger-event">on each event <code>lead.created</code></li>' in page


def test_the_runs_a_record_started_are_found_by_their_key_over_rest(on_approved, alice_api):
    pg_row_id = order(alice_api, status="approved")
    rows = alice_api.get(
        "/v1/rest/process_run",
        {"select": "process_id,idempotency_key", "idempotency_key": f"like.record:*:{pg_row_id}:*"},
    ).json()
    assert rows == [
        {
            "process_id": "acme:on-approved",
            "idempotency_key": f"record:acme:on-approved:{pg_row_id}:1",
        }
    ]
