"""``GET /v1/processes/runs/:runId`` in the seed's shape, its scoping, and the same rows through
``/v1/rest`` as ``process_run`` / ``process_run_step``."""

from __future__ import annotations

from pathlib import Path

import pytest

from processes.invoke import run_invoke
from processes.models import ProcessRun
from records.models import Record
from tests.processes.conftest import FAILS_AT_SECOND, drain_runs

pytestmark = pytest.mark.django_db

SEED_PROCESSES = Path(__file__).resolve().parent.parent / "extensions" / "fixtures" / "processes"


def invoke(process_id: str, user, body: dict | None = None) -> ProcessRun:
    return run_invoke(
        process_id=process_id, body={"memo": "m"} if body is None else body, user=user
    )


def test_a_run_reads_in_exactly_the_seed_shape(alice_api, alice, two_notes):
    run = invoke("acme:two-notes", alice)
    drain_runs()
    run.refresh_from_db()
    first, second = run.ledger.order_by("sequence")
    res = alice_api.get(f"/v1/processes/runs/{run.run_id}")
    assert res.status_code == 200
    body = res.json()
    started, finished = body["run"].pop("startedAt"), body["run"].pop("finishedAt")
    assert started and finished and started <= finished
    assert body == {
        "run": {
            "runId": str(run.run_id),
            "processId": "acme:two-notes",
            "state": "committed",
            "reason": None,
            "outstanding": 0,
            "mode": "async",
            "pendingReason": None,
            "wakeAt": None,
            "retryAt": None,
            "pendingDetail": None,
            "invokedBy": "alice",
            "schedule": None,
            "slices": 1,
            "writes": 2,
            "moduleVersion": 1,
            "sliceLog": [],
            "refusal": None,
            "linkedFrom": None,
            "linkedTo": [],
            "redrives": 0,
        },
        "steps": [
            {
                "sequence": 1,
                "stepId": "first",
                "recordType": "salesOrder",
                "pgRowId": str(first.pg_row_id),
                "externalId": None,
                "disposition": "confirmed",
                "rowKey": "",
                "slice": 1,
                "refusal": None,
                "superseded": 0,
            },
            {
                "sequence": 2,
                "stepId": "second",
                "recordType": "salesOrder",
                "pgRowId": str(second.pg_row_id),
                "externalId": None,
                "disposition": "confirmed",
                "rowKey": "",
                "slice": 1,
                "refusal": None,
                "superseded": 0,
            },
        ],
    }


def test_a_queued_run_reads_queued_with_its_pending_reason_and_no_steps(
    alice_api, alice, two_notes
):
    run = invoke("acme:two-notes", alice)
    body = alice_api.get(f"/v1/processes/runs/{run.run_id}").json()
    assert (body["run"]["state"], body["run"]["pendingReason"], body["run"]["startedAt"]) == (
        "queued",
        "queued",
        None,
    )
    assert body["steps"] == []


def test_a_failed_step_carries_the_refusing_partys_code_field_and_message(alice_api, alice, deploy):
    deploy(FAILS_AT_SECOND, "fails.ts")
    run = invoke("acme:fails-at-second", alice, {})
    drain_runs()
    body = alice_api.get(f"/v1/processes/runs/{run.run_id}").json()
    assert body["run"]["state"] == "failed"
    assert (
        body["run"]["reason"] == "step 'item' failed: REQUIRED_FIELD_MISSING: legacy_id is required"
    )
    assert [(s["stepId"], s["disposition"], s["refusal"]) for s in body["steps"]] == [
        ("order", "confirmed", None),
        (
            "item",
            "failed",
            {
                "code": "REQUIRED_FIELD_MISSING",
                "field": "parent.legacy_id",
                "message": "legacy_id is required",
            },
        ),
    ]


def test_the_seeds_raise_po_and_bill_runs_against_the_sandbox_source(alice_api, alice, deploy):
    deploy((SEED_PROCESSES / "raise-po-and-bill.ts").read_text(), "raise-po-and-bill.ts")
    res = alice_api.post(
        "/v1/processes/acme:raise-po-and-bill", {"vendorId": "123", "amount": 250}, format="json"
    )
    assert res.status_code == 202, res.content
    run_id = res.json()["runId"]
    drain_runs()
    body = alice_api.get(f"/v1/processes/runs/{run_id}").json()
    assert (body["run"]["state"], body["run"]["reason"], body["run"]["outstanding"]) == (
        "committed",
        None,
        0,
    )
    po, bill = body["steps"]
    assert (po["stepId"], po["recordType"], po["disposition"]) == (
        "po",
        "purchaseOrder",
        "confirmed",
    )
    assert po["externalId"].startswith("PO")
    assert (bill["stepId"], bill["recordType"], bill["disposition"]) == (
        "bill",
        "vendorBill",
        "confirmed",
    )
    assert Record.reads.get(pk=bill["pgRowId"]).fields["created_from_id"] == po["externalId"]


def test_another_users_run_is_404_and_an_admin_sees_it(alice, bob_api, admin_api, two_notes):
    run = invoke("acme:two-notes", alice)
    res = bob_api.get(f"/v1/processes/runs/{run.run_id}")
    assert res.status_code == 404
    assert res.json() == {"error": "process_run_not_found", "runId": str(run.run_id)}
    assert admin_api.get(f"/v1/processes/runs/{run.run_id}").status_code == 200


def test_a_malformed_run_id_is_404(alice_api):
    res = alice_api.get("/v1/processes/runs/not-a-uuid")
    assert res.status_code == 404
    assert res.json()["error"] == "process_run_not_found"


def test_reading_a_run_needs_credentials(alice, two_notes):
    from rest_framework.test import APIClient

    run = invoke("acme:two-notes", alice)
    assert APIClient().get(f"/v1/processes/runs/{run.run_id}").status_code == 401


def test_process_run_through_rest_is_scoped_to_the_invoker(
    alice, bob, alice_api, bob_api, admin_api, two_notes
):
    mine, theirs = invoke("acme:two-notes", alice), invoke("acme:two-notes", bob)
    drain_runs()
    url = "/v1/rest/process_run?select=run_id,process_id,state,outstanding,invoked_by&order=created_at"
    assert alice_api.get(url).json() == [
        {
            "run_id": str(mine.run_id),
            "process_id": "acme:two-notes",
            "state": "committed",
            "outstanding": 0,
            "invoked_by": alice.pk,
        }
    ]
    assert [r["run_id"] for r in bob_api.get(url).json()] == [str(theirs.run_id)]
    assert [r["run_id"] for r in admin_api.get(url).json()] == [
        str(mine.run_id),
        str(theirs.run_id),
    ]


def test_process_run_step_through_rest_is_scoped_and_carries_the_ledger_columns(
    alice, bob, alice_api, bob_api, admin_api, deploy
):
    deploy(FAILS_AT_SECOND, "fails.ts")
    run = invoke("acme:fails-at-second", alice, {})
    drain_runs()
    url = (
        f"/v1/rest/process_run_step?run_id=eq.{run.run_id}"
        "&select=sequence,step_id,disposition,refusal_code,refusal_field,refusal_message,row_key,slice"
    )
    expected = [
        {
            "sequence": 1,
            "step_id": "order",
            "disposition": "confirmed",
            "refusal_code": None,
            "refusal_field": None,
            "refusal_message": None,
            "row_key": "",
            "slice": 1,
        },
        {
            "sequence": 2,
            "step_id": "item",
            "disposition": "failed",
            "refusal_code": "REQUIRED_FIELD_MISSING",
            "refusal_field": "parent.legacy_id",
            "refusal_message": "legacy_id is required",
            "row_key": "",
            "slice": 1,
        },
    ]
    assert alice_api.get(url).json() == expected
    assert bob_api.get(url).json() == []
    assert admin_api.get(url).json() == expected
    assert bob_api.get("/v1/rest/process_run_step").json() == []


def test_process_run_through_rest_filters_by_state(alice, alice_api, deploy, two_notes):
    deploy(FAILS_AT_SECOND, "fails.ts")
    invoke("acme:two-notes", alice)
    failed = invoke("acme:fails-at-second", alice, {})
    drain_runs()
    res = alice_api.get("/v1/rest/process_run?state=eq.failed&select=run_id")
    assert res.json() == [{"run_id": str(failed.run_id)}]
    bad = alice_api.get("/v1/rest/process_run?nope=eq.1")
    assert bad.status_code == 400
    assert bad.json()["rejection"]["field"] == "nope"
