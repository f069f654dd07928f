"""Event triggers: ``trigger: { event }`` starts one run per new event of that name, as the sender,
with the event's data as input; the runs are the ``runs`` of ``POST /v1/events``. And the
migration batch door: records a batched migration creates in the state start their runs too."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from guardrails.settings import setting_set
from processes.models import Process, ProcessRun, RunState
from records.models import Record
from tests.processes.conftest import drain_runs
from tests.processes.engine_support import deploy as deploy_as
from tests.processes.engine_support import invoke, pump
from tests.processes.test_engine__migration import _items
from tests.processes.test_engine__migration_batches import SOURCE as BATCHED
from tests.processes.test_triggers_record import ON_APPROVED
from tests.workers import QCluster, wait_until

pytestmark = pytest.mark.django_db

ON_LEAD = """\
import { defineProcess } from '@turbobase/extensions';

export default defineProcess({
  id: 'acme:on-lead',
  trigger: { event: 'lead.created' },
  input: { type: 'object', properties: { company: { type: 'string' } }, required: ['company'] },
  steps: [{
    id: 'customer',
    recordType: 'legacy_customer',
    build: (ctx) => ({ parent: { company_name: ctx.input.company } }),
  }],
});
"""


@pytest.fixture
def on_lead(deploy) -> str:
    return deploy(ON_LEAD, "on-lead.ts").id


def send(api, body: dict) -> dict:
    res = api.post("/v1/events", body, format="json")
    assert res.status_code == 202, res.content
    return res.json()


def lead_runs() -> list[ProcessRun]:
    return list(ProcessRun.objects.filter(process_id="acme:on-lead").order_by("created_at"))


def test_each_event_of_the_name_starts_one_run_as_the_sender_with_its_data(
    on_lead, alice, alice_api
):
    sent = send(alice_api, {"name": "lead.created", "data": {"company": "Acme"}})
    [run] = lead_runs()
    assert sent["runs"] == [
        {"runId": str(run.run_id), "processId": "acme:on-lead", "state": "queued"}
    ]
    assert (run.input, run.invoked_by, run.idempotency_key) == (
        {"company": "Acme"},
        alice,
        f"event:acme:on-lead:{sent['eventId']}",
    )
    drain_runs()
    run.refresh_from_db()
    assert run.state == RunState.COMMITTED
    made = Record.reads.get(record_type="legacy_customer")
    assert (made.fields, made.owner) == ({"company_name": "Acme"}, alice)
    # A second event is a second run; another name starts nothing.
    send(alice_api, {"name": "lead.created", "data": {"company": "Beta"}})
    assert send(alice_api, {"name": "lead.updated", "data": {"company": "Acme"}})["runs"] == []
    assert [r.input["company"] for r in lead_runs()] == ["Acme", "Beta"]


def test_the_same_key_again_answers_the_same_runs_and_starts_nothing(on_lead, alice_api):
    body = {"name": "lead.created", "data": {"company": "Acme"}, "key": "lead-1"}
    first, again = send(alice_api, body), send(alice_api, body)
    assert (again["eventId"], again["runs"], again["replayed"]) == (
        first["eventId"],
        first["runs"],
        True,
    )
    assert len(lead_runs()) == 1


def test_event_data_the_schema_refuses_is_a_refused_run_naming_the_field(on_lead, alice_api):
    sent = send(alice_api, {"name": "lead.created", "data": {"company": 7}})
    [run] = lead_runs()
    assert sent["runs"] == [
        {"runId": str(run.run_id), "processId": "acme:on-lead", "state": "refused"}
    ]
    assert (run.refusal_code, run.refusal_field, run.reason) == (
        "INPUT_INVALID",
        "input.company",
        "input.company: 7 is not of type 'string'",
    )
    assert drain_runs() == 0


def test_an_event_for_a_switched_off_process_is_a_refused_run_naming_the_switch(on_lead, alice_api):
    Process.objects.filter(pk="acme:on-lead").update(is_enabled=False, disabled_reason="paused")
    sent = send(alice_api, {"name": "lead.created", "data": {"company": "Acme"}})
    assert [r["state"] for r in sent["runs"]] == ["refused"]
    assert lead_runs()[0].reason == "switched off (acme:on-lead.enabled): paused"


def test_records_a_batched_migration_creates_in_the_state_start_one_run_each(
    admin_user, alice, deploy
):
    # The migration batch door (records_create_batch) tells the watchers of each create.
    deploy(
        ON_APPROVED.replace("salesOrder", "customer").replace(
            "enters: { status: 'approved' }", "enters: { company_name: 'Company 2' }"
        ),
        "on-approved.ts",
    )
    deploy_as(BATCHED, by=admin_user)
    setting_set("processes.slice_batch_rows", 4)
    _items(alice, 6)
    migration = invoke("t:batched", {}, alice)
    pump(sources=False)
    migration.refresh_from_db()
    assert (migration.state, migration.writes) == ("committed", 6)
    [run] = ProcessRun.objects.filter(process_id="acme:on-approved")
    created = Record.reads.get(record_type="customer", fields__company_name="Company 2")
    assert (run.input["pgRowId"], run.input["recordType"], run.invoked_by) == (
        str(created.pg_row_id),
        "customer",
        alice,
    )


@pytest.mark.workers
@pytest.mark.django_db(transaction=True)
def test_an_event_over_http_is_run_once_by_a_worker_as_the_sender(admin_user, alice, tmp_path):
    deploy_as(ON_LEAD, by=admin_user, name="processes/on-lead.ts")
    api = APIClient()
    api.force_authenticate(user=alice)
    with QCluster(workers=2, log_path=tmp_path / "q.log"):
        sent = send(api, {"name": "lead.created", "data": {"company": "Acme"}, "key": "k1"})
        send(api, {"name": "lead.created", "data": {"company": "Acme"}, "key": "k1"})  # replay
        [queued] = sent["runs"]
        wait_until(
            lambda: ProcessRun.objects.filter(
                pk=queued["runId"], state=RunState.COMMITTED
            ).exists(),
            timeout=60,
            message="the triggered run committed",
        )
    [run] = lead_runs()
    assert (run.invoked_by, run.delivery) == (alice, 1)
    assert Record.reads.filter(record_type="legacy_customer").count() == 1
