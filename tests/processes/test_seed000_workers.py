"""Seed 000's last rules (issue 10) through HTTP with real workers: the process lanes and the
outbound worker are ``manage.py qcluster`` processes, the caller is an API client.

Each test is one rule the audit found different, now asserted as the seed writes it: a delete the
source refuses, the step that ended a run, held deletes naming their step, the next slice on a new
version, a slice that always finishes a row, the seed's own ``acme:migrate-customers`` on the
demo's rows, and an AI step that is asked once per run and row.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from guardrails.rules import rule_set
from guardrails.settings import setting_set
from processes.models import ProcessRun, RunState
from records.models import Record
from tests.processes.engine_support import deploy
from tests.processes.test_engine__ai_step import MIGRATE as TAG_LEGACY
from tests.processes.test_engine__ai_step import model  # noqa: F401 (a fixture)
from tests.workers import QCluster, wait_until

pytestmark = [pytest.mark.workers, pytest.mark.django_db(transaction=True)]

FIXTURES = Path(__file__).parent.parent / "extensions" / "fixtures" / "processes"
TERMINAL = [
    state.value
    for state in (RunState.COMMITTED, RunState.FAILED, RunState.ROLLED_BACK, RunState.CANCELLED)
]


def _legacy_rows(client: APIClient, count: int) -> None:
    for n in range(1, count + 1):
        res = client.post(
            "/v1/data/legacy_customer",
            {"parent": {"id": f"L-{n}", "company_name": f"Company {n}"}},
            format="json",
        )
        assert res.status_code == 201, res.content


def _ended(run_id: str) -> bool:
    return ProcessRun.objects.filter(pk=run_id, state__in=TERMINAL).exists()


def _invoke(client: APIClient, process_id: str, body: dict) -> str:
    res = client.post(f"/v1/processes/{process_id}", body, format="json")
    assert res.status_code == 202, res.content
    return res.json()["runId"]


def _run_read(client: APIClient, run_id: str) -> dict:
    res = client.get(f"/v1/processes/runs/{run_id}")
    assert res.status_code == 200, res.content
    return res.json()


def _steps(body: dict) -> list[tuple]:
    return [
        (s["stepId"], s["disposition"], (s["refusal"] or {}).get("code")) for s in body["steps"]
    ]


def _synced(record_id: str) -> str | None:
    return (
        Record.reads.filter(pk=record_id, sync_state="synced")
        .values_list("external_id", flat=True)
        .first()
    )


def _cleanup(pid: str, on_refused: str, *, held_step: bool) -> str:
    held = (
        """
    { id: 'drop-order', recordType: 'salesOrder',
      delete: { externalId: (ctx) => ctx.input.orderId, sourceSystem: 'netsuite' },
      onRefused: 'continue' },"""
        if held_step
        else ""
    )
    return f"""import {{ defineProcess }} from '@turbobase/extensions';
export default defineProcess({{
  id: '{pid}',
  input: {{ type: 'object' }},
  steps: [{held}
    {{ id: 'drop-invoice', recordType: 'invoice',
      delete: {{ externalId: (ctx) => ctx.input.invoiceId, sourceSystem: 'netsuite' }},
      onRefused: '{on_refused}' }},
    {{ id: 'stamp', recordType: 'legacy_customer', build: () => ({{ parent: {{ colour: 'red' }} }}) }},
  ],
}});
"""


def test_a_delete_the_source_refuses_fails_its_step_and_the_failure_names_the_ending_step(
    admin_user, alice_api, admin_api, tmp_path
):
    # Invoice deletes are sent (not held); sales-order deletes keep the stock hold.
    rule_set(record_type="invoice", action="delete", decision="allow_with_audit")
    # The stamp writes an undeclared field on purpose (FIELD_UNDECLARED when the run writes it),
    # which the deploy's type check would refuse first: off for these two deploys.
    with override_settings(EXTENSIONS_DEPLOY_TYPECHECK=0):
        deploy(_cleanup("t:cleanup-continue", "continue", held_step=True), by=admin_user)
        deploy(
            _cleanup("t:cleanup-stop", "stop", held_step=False),
            by=admin_user,
            name="processes/b.ts",
        )
    with QCluster(workers=2, log_path=tmp_path / "q.log"):
        made = {
            "invoice": alice_api.post(
                "/v1/data/invoice",
                {"parent": {"entity_id": "E"}, "lines": [{"item": "i"}]},
                format="json",
            ),
            "order": alice_api.post(
                "/v1/data/salesOrder", {"parent": {"entity_id": "E"}}, format="json"
            ),
        }
        assert {name: res.status_code for name, res in made.items()} == {
            "invoice": 201,
            "order": 201,
        }
        ids = {name: res.json()["pgRowId"] for name, res in made.items()}
        wait_until(
            lambda: all(_synced(pk) for pk in ids.values()), timeout=90, message="both synced"
        )
        invoice_ext, order_ext = _synced(ids["invoice"]), _synced(ids["order"])
        memo = alice_api.post(
            "/v1/data/creditMemo", {"parent": {"created_from_id": invoice_ext}}, format="json"
        )
        assert memo.status_code == 201, memo.content
        wait_until(lambda: _synced(memo.json()["pgRowId"]), timeout=90, message="memo synced")

        on = _invoke(
            alice_api, "t:cleanup-continue", {"invoiceId": invoice_ext, "orderId": order_ext}
        )
        wait_until(lambda: _ended(on), timeout=120, message="the continue run ended")
        stop = _invoke(alice_api, "t:cleanup-stop", {"invoiceId": invoice_ext})
        wait_until(lambda: _ended(stop), timeout=120, message="the stop run ended")

    body = _run_read(alice_api, on)
    assert body["run"]["state"] == "failed"
    assert _steps(body) == [
        ("drop-order", "confirmed", "SOURCE_AWAITING_CONFIRMATION"),  # held, not refused
        ("drop-invoice", "failed", "RECORD_REFERENCED"),  # the source's verdict, waited for
        ("stamp", "failed", "FIELD_UNDECLARED"),
    ]
    assert body["steps"][1]["refusal"]["message"].startswith(
        f"invoice {invoice_ext} cannot be deleted: creditMemo"
    )
    stopped = _run_read(alice_api, stop)
    assert stopped["run"]["state"] == "failed"
    assert _steps(stopped) == [
        ("drop-invoice", "failed", "RECORD_REFERENCED"),
        ("stamp", "skipped", None),
    ]
    # The record the source kept is back; the held one stays hidden for an operator.
    assert Record.reads.get(pk=ids["invoice"]).sync_state == "synced"
    assert Record.reads.get(pk=ids["order"]).sync_state == "delete_held"

    failures = {
        run["runId"]: run["failure"]
        for run in alice_api.get("/v1/processes/queue").json()["runs"]
        if run["runId"] in (on, stop)
    }
    assert (failures[on]["stepId"], failures[on]["code"]) == ("stamp", "FIELD_UNDECLARED")
    assert (failures[stop]["stepId"], failures[stop]["code"]) == (
        "drop-invoice",
        "RECORD_REFERENCED",
    )

    [held] = admin_api.get("/v1/guardrails/held-deletes").json()["heldDeletes"]
    assert (held["pgRowId"], held["processRunId"], held["processStep"]) == (
        ids["order"],
        on,
        "drop-order",
    )


VERSIONED = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:versioned',
  input: { type: 'object' },
  // %s
  eachRow: { outstanding: () => %s, key: 'id' },
  steps: [{ id: 'copy', recordType: 'customer',
            build: (ctx) => ({ parent: { company_name: ctx.row.company_name } }) }],
});
"""


def test_the_next_slice_runs_the_version_deployed_meanwhile(admin_user, alice_api, tmp_path):
    _legacy_rows(alice_api, 2)
    # Version 1 never excludes a row and a slice takes one of the two, so the run goes on slice
    # after slice (re-offering L-1) until version 2, which has nothing outstanding, is picked up.
    deploy(VERSIONED % ("v1", "'legacy_customer?select=id,company_name&order=id'"), by=admin_user)
    setting_set("processes.slice_max_rows", 1)
    setting_set("processes.slice_cap", 100_000)
    setting_set("processes.max_run_ms", 3_600_000)
    with QCluster(workers=2, log_path=tmp_path / "q.log"):
        run_id = _invoke(alice_api, "t:versioned", {})
        wait_until(
            lambda: ProcessRun.objects.filter(pk=run_id, slices__gte=2).exists(),
            timeout=120,
            message="a second slice",
        )
        deploy(
            VERSIONED % ("v2", "'legacy_customer?select=id,company_name&id=eq.none'"),
            by=admin_user,
        )
        wait_until(lambda: _ended(run_id), timeout=180, message="version 2 ended the run")
    body = _run_read(alice_api, run_id)["run"]
    versions = [entry["moduleVersion"] for entry in body["sliceLog"]]
    assert (body["state"], body["outstanding"], body["moduleVersion"]) == ("committed", 0, 2)
    assert versions[0] == 1 and versions[-1] == 2
    assert versions == sorted(versions)  # never back to the old version once the new one ran
    assert versions.count(2) == 1  # version 2's first slice found nothing left
    assert Record.reads.filter(record_type="customer").count() == 1  # one row, written once


def test_a_one_millisecond_slice_still_moves_a_row_each_slice(admin_user, alice_api, tmp_path):
    for n in range(4):
        res = alice_api.post(
            "/v1/data/migration_item",
            {
                "parent": {
                    "legacy_id": f"L{n}",
                    "company_name": f"Company {n}",
                    "status": "pending",
                    "batch": "2026-10",
                }
            },
            format="json",
        )
        assert res.status_code == 201, res.content
    deploy((FIXTURES / "migrate-customers-tracked.ts").read_text(), by=admin_user)
    setting_set("processes.slice_max_ms", 1)
    setting_set("processes.max_run_ms", 600_000)  # the run's ceiling is not what this is about
    with QCluster(workers=2, log_path=tmp_path / "q.log"):
        run_id = _invoke(alice_api, "acme:migrate-customers-tracked", {"batch": "2026-10"})
        wait_until(lambda: _ended(run_id), timeout=120, message="the migration ended")
    body = _run_read(alice_api, run_id)
    run = body["run"]
    assert (run["state"], run["outstanding"], run["reason"], run["writes"]) == (
        "committed",
        0,
        None,
        8,
    )
    # Every slice finished the first row it took, whatever the clock said.
    assert 2 <= run["slices"] <= 4
    assert sorted({s["slice"] for s in body["steps"] if s["stepId"] == "create"}) == list(
        range(1, run["slices"] + 1)
    )
    assert sorted(
        Record.reads.filter(record_type="customer").values_list("fields__company_name", flat=True)
    ) == [f"Company {n}" for n in range(4)]


def test_the_seeds_migrate_customers_runs_as_written_and_twice_writes_nothing(
    admin_user, alice_api, tmp_path
):
    _legacy_rows(alice_api, 3)
    # A read of an undeclared column is refused by name, as PostgREST does.
    bad = alice_api.get("/v1/rest/legacy_customer?select=id,colour")
    assert (bad.status_code, bad.json()["rejection"]["field"]) == (400, "select")
    deploy((FIXTURES / "migrate-customers.ts").read_text(), by=admin_user)
    with QCluster(workers=2, log_path=tmp_path / "q.log"):
        first = _invoke(alice_api, "acme:migrate-customers", {})
        wait_until(lambda: _ended(first), timeout=120, message="the first run ended")
        second = _invoke(alice_api, "acme:migrate-customers", {})
        wait_until(lambda: _ended(second), timeout=120, message="the second run ended")
    one, two = _run_read(alice_api, first), _run_read(alice_api, second)
    assert (one["run"]["state"], one["run"]["outstanding"]) == ("committed", 0)
    assert [(s["rowKey"], s["disposition"]) for s in one["steps"]] == [
        (f"L-{n}", "confirmed") for n in range(1, 4)
    ]
    assert two["run"]["state"] == "committed"
    assert [(s["rowKey"], s["disposition"]) for s in two["steps"]] == [
        (f"L-{n}", "skipped") for n in range(1, 4)
    ]
    assert [s["pgRowId"] for s in two["steps"]] == [s["pgRowId"] for s in one["steps"]]
    assert Record.reads.filter(record_type="customer").count() == 3


def test_an_ai_step_is_asked_once_per_run_and_row_across_slices(
    admin_user,
    alice_api,
    model,  # noqa: F811 (the fixture imported above)
    tmp_path,
    settings,
):
    _legacy_rows(alice_api, 3)
    setting_set("processes.slice_max_rows", 2)
    setting_set("processes.slice_cap", 2)
    deploy(TAG_LEGACY, by=admin_user)
    provider = {
        "TURBOBASE_AI_PROVIDER": "openai",
        "TURBOBASE_AI_BASE_URL": settings.TURBOBASE_AI_BASE_URL,
        "TURBOBASE_AI_MODEL": "test-model",
        "TURBOBASE_AI_API_KEY": os.environ["TURBOBASE_AI_API_KEY"],
    }
    with QCluster(workers=2, log_path=tmp_path / "q.log", extra_env=provider):
        first = _invoke(alice_api, "acme:tag-legacy", {})
        wait_until(lambda: _ended(first), timeout=120, message="the first run ended")
        asked_by_the_first = list(model.prompts)
        second = _invoke(alice_api, "acme:tag-legacy", {})
        wait_until(lambda: _ended(second), timeout=120, message="the second run ended")
    assert sorted(asked_by_the_first) == ["Tag Company 1", "Tag Company 2", "Tag Company 3"]
    tags = [
        (s["slice"], s["rowKey"], s["disposition"])
        for s in _run_read(alice_api, first)["steps"]
        if s["stepId"] == "tag"
    ]
    assert tags == [
        (1, "L-1", "confirmed"),
        (1, "L-2", "confirmed"),
        (2, "L-2", "skipped"),  # offered again by a later slice: handed on, not asked
        (2, "L-3", "confirmed"),
    ]
    assert model.prompts[3:] == ["Tag Company 2"]  # a new run asks again, once


def test_cancelling_a_run_waiting_on_the_source_answers_cancelled_and_keeps_what_landed(
    admin_user, alice_api, tmp_path
):
    from sources.scripting import sandbox_script_set

    deploy((FIXTURES / "raise-po-and-bill.ts").read_text(), by=admin_user)
    sandbox_script_set("purchaseOrder", never_answer=True)  # the po's verdict never comes
    with QCluster(workers=2, log_path=tmp_path / "q.log"):
        run_id = _invoke(alice_api, "acme:raise-po-and-bill", {"vendorId": "V", "amount": 1})
        wait_until(
            lambda: ProcessRun.objects.filter(pk=run_id, waiting_step="po").exists(),
            timeout=90,
            message="the run waiting on the po's verdict",
        )
        res = alice_api.post(f"/v1/processes/runs/{run_id}/cancel")
        assert (res.status_code, res.json()) == (200, {"runId": run_id, "state": "cancelled"})
        wait_until(lambda: _ended(run_id), timeout=60, message="the run ended")
    run = _run_read(alice_api, run_id)["run"]
    assert (run["state"], run["outstanding"]) == ("cancelled", 1)
    assert Record.reads.filter(record_type="purchaseOrder").count() == 1  # what landed stays
    assert not Record.reads.filter(record_type="vendorBill").exists()


def test_a_settle_conflict_s_source_id_is_read_on_record_write_state_by_its_writer(
    admin_user, alice_api, admin_api, tmp_path
):
    from sources.scripting import sandbox_script_set
    from tests.conftest import client_for, make_user

    deploy((FIXTURES / "raise-po-and-bill.ts").read_text(), by=admin_user)
    sandbox_script_set("purchaseOrder", settle_conflict=True)  # created upstream, link fails
    with QCluster(workers=2, log_path=tmp_path / "q.log"):
        run_id = _invoke(alice_api, "acme:raise-po-and-bill", {"vendorId": "V", "amount": 1})
        wait_until(lambda: _ended(run_id), timeout=120, message="the run ended")
    read = _run_read(alice_api, run_id)
    po = read["steps"][0]
    assert (po["stepId"], po["disposition"], po["refusal"]["code"]) == (
        "po",
        "failed",
        "SOURCE_APPLIED_UNLINKED",
    )
    assert read["run"]["state"] == "failed"  # the po is kept: nothing was rolled back
    query = (
        "/v1/rest/record_write_state?select=pg_row_id,external_id,reason_code"
        "&reason_code=eq.write_settle_conflict"
    )
    expected = [
        {
            "pg_row_id": po["pgRowId"],
            "external_id": po["externalId"],
            "reason_code": "write_settle_conflict",
        }
    ]
    assert po["externalId"]
    assert alice_api.get(query).json() == expected  # the writer
    assert admin_api.get(query).json() == expected  # an administrator
    assert client_for(make_user("mallory")).get(query).json() == []  # nobody else
