"""``POST /v1/processes/:id``: every answer of seed 000's invoke table, and who may invoke."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from guardrails.settings import setting_set
from kernel.models import token_issue
from processes.models import Process, ProcessRun
from records.models import Record
from tests.conftest import make_user
from tests.processes.conftest import drain_runs

pytestmark = pytest.mark.django_db

URL = "/v1/processes/acme:two-notes"


def token_client(user, scopes: list[str]) -> APIClient:
    _, raw = token_issue(user=user, scopes=scopes)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def assert_no_run() -> None:
    assert ProcessRun.objects.count() == 0


def test_queued_answers_202_with_the_run_and_runs_nothing_on_the_request(
    alice_api, alice, two_notes
):
    res = alice_api.post(URL, {"memo": "hello"}, format="json")
    assert res.status_code == 202, res.content
    run = ProcessRun.objects.get()
    assert res.json() == {
        "runId": str(run.run_id),
        "processId": "acme:two-notes",
        "state": "queued",
    }
    assert (run.state, run.mode, run.input, run.invoked_by) == (
        "queued",
        "async",
        {"memo": "hello"},
        alice,
    )
    assert run.ledger.count() == 0
    assert Record.reads.count() == 0


def test_the_body_is_the_input_bare_an_envelope_is_what_the_process_sees(alice_api, deploy):
    deploy(
        """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'acme:open-input',
  input: { type: 'object' },
  steps: [{ id: 'only', recordType: 'salesOrder', build: (ctx) => ({ parent: { custom: ctx.input } }) }],
});
""",
        "open-input.ts",
    )
    res = alice_api.post("/v1/processes/acme:open-input", {"input": {"batch": 7}}, format="json")
    assert res.status_code == 202, res.content
    assert ProcessRun.objects.get().input == {"input": {"batch": 7}}
    drain_runs()
    assert Record.reads.get().fields["custom"] == {"input": {"batch": 7}}


def test_no_credentials_is_401(two_notes):
    res = APIClient().post(URL, {"memo": "x"}, format="json")
    assert res.status_code == 401
    assert res.json()["error"] == "not_authenticated"
    assert_no_run()


def test_unknown_process_is_404_naming_the_id(alice_api, two_notes):
    res = alice_api.post("/v1/processes/acme:nope", {"memo": "x"}, format="json")
    assert res.status_code == 404
    assert res.json() == {"error": "process_not_found", "id": "acme:nope"}
    assert_no_run()


def test_a_removed_process_is_404(alice_api, admin_user, two_notes):
    from extensions.deploy import extension_remove

    extension_remove(module_id="acme:two-notes", by=admin_user)
    res = alice_api.post(URL, {"memo": "x"}, format="json")
    assert res.status_code == 404
    assert res.json() == {"error": "process_not_found", "id": "acme:two-notes"}


def test_input_failing_the_schema_is_400_naming_the_field_and_creates_no_run(alice_api, two_notes):
    res = alice_api.post(URL, {"note": "x"}, format="json")
    assert res.status_code == 400
    body = res.json()
    assert body["error"] == "invalid_input"
    assert (body["rejection"]["code"], body["rejection"]["field"]) == ("INPUT_INVALID", "memo")
    assert "memo" in body["rejection"]["message"]
    assert "runId" not in body
    assert_no_run()


def test_wrong_type_names_the_field(alice_api, two_notes):
    res = alice_api.post(URL, {"memo": 5}, format="json")
    assert res.status_code == 400
    assert res.json()["rejection"]["field"] == "memo"
    assert_no_run()


def test_a_wrapped_body_against_a_strict_schema_is_400(alice_api, two_notes):
    res = alice_api.post(URL, {"input": {"memo": "x"}}, format="json")
    assert res.status_code == 400
    assert res.json()["error"] == "invalid_input"
    assert_no_run()


def test_a_body_that_is_not_an_object_is_400_invalid_input(alice_api, two_notes):
    res = alice_api.post(URL, [1, 2], format="json")
    assert res.status_code == 400
    assert res.json()["error"] == "invalid_input"
    assert_no_run()


def test_an_unknown_mode_is_400_invalid_mode(alice_api, two_notes):
    res = alice_api.post(URL + "?mode=later", {"memo": "x"}, format="json")
    assert res.status_code == 400
    body = res.json()
    assert body["error"] == "invalid_mode"
    assert (body["rejection"]["code"], body["rejection"]["field"]) == ("INVALID_MODE", "mode")
    assert "runId" not in body
    assert_no_run()


def test_explicit_async_mode_is_queued_on_the_async_lane(alice_api, two_notes):
    res = alice_api.post(URL + "?mode=async", {"memo": "x"}, format="json")
    assert res.status_code == 202
    assert ProcessRun.objects.get().mode == "async"


def test_a_process_switched_off_is_409_with_its_reason(alice_api, two_notes):
    Process.objects.filter(pk="acme:two-notes").update(
        is_enabled=False, disabled_reason="month-end freeze"
    )
    res = alice_api.post(URL, {"memo": "x"}, format="json")
    assert res.status_code == 409
    assert res.json() == {
        "error": "process_disabled",
        "id": "acme:two-notes",
        "reason": "month-end freeze",
    }
    assert_no_run()


def test_every_process_switched_off_is_409_naming_the_instance_switch(alice_api, two_notes):
    setting_set("processes.enabled", 0)
    res = alice_api.post(URL, {"memo": "x"}, format="json")
    assert res.status_code == 409
    assert res.json() == {
        "error": "process_disabled",
        "id": "acme:two-notes",
        "reason": "every process on the instance is switched off",
    }
    assert_no_run()


def test_an_admin_token_with_extensions_deploy_invokes_and_the_run_is_its_owners(
    admin_user, two_notes
):
    res = token_client(admin_user, ["extensions:deploy"]).post(URL, {"memo": "x"}, format="json")
    assert res.status_code == 202, res.content
    assert ProcessRun.objects.get().invoked_by == admin_user


@pytest.mark.parametrize(
    "owner_is_admin, scopes, error",
    [
        (False, ["extensions:deploy"], "admin_required"),
        (True, ["data:read", "data:write"], "insufficient_scope"),
        (False, ["data:write"], "insufficient_scope"),
    ],
)
def test_any_other_token_is_403(owner_is_admin, scopes, error, two_notes):
    owner = make_user("tokenowner", admin=owner_is_admin)
    res = token_client(owner, scopes).post(URL, {"memo": "x"}, format="json")
    assert res.status_code == 403
    assert res.json()["error"] == error
    assert_no_run()


def test_a_non_admin_session_may_invoke(bob, two_notes):
    client = APIClient()
    assert client.login(username="bob", password="pw-bob")
    res = client.post(URL, {"memo": "x"}, format="json")
    assert res.status_code == 202
    assert ProcessRun.objects.get().invoked_by == bob


def test_sync_past_the_budget_is_202_sync_budget_exceeded_and_the_run_goes_on(alice_api, two_notes):
    # In this test's transaction no worker can see the run, so it cannot settle within the budget.
    setting_set("processes.sync_budget_ms", 150)
    res = alice_api.post(URL + "?mode=sync", {"memo": "x"}, format="json")
    assert res.status_code == 202
    run = ProcessRun.objects.get()
    body = res.json()
    assert body.pop("message").startswith(
        "the run did not settle within the synchronous budget of 150 ms"
    )
    assert body == {
        "error": "sync_budget_exceeded",
        "runId": str(run.run_id),
        "processId": "acme:two-notes",
        "state": "queued",
    }
    assert (run.mode, run.state) == ("sync", "queued")
    drain_runs()
    run.refresh_from_db()
    assert (run.state, run.outstanding) == ("committed", 0)


def test_sync_refusals_carry_no_run_id(alice_api, two_notes):
    res = alice_api.post(URL + "?mode=sync", {"memo": 1}, format="json")
    assert res.status_code == 400
    assert "runId" not in res.json()
    assert_no_run()


def test_sync_answers_200_with_the_settled_run_and_its_steps(alice_api, two_notes, inline_worker):
    res = alice_api.post(URL + "?mode=sync", {"memo": "x"}, format="json")
    assert res.status_code == 200, res.content
    run = ProcessRun.objects.get()
    first, second = run.ledger.order_by("sequence")
    assert res.json() == {
        "runId": str(run.run_id),
        "processId": "acme:two-notes",
        "state": "committed",
        "reason": None,
        "outstanding": 0,
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
    assert run.mode == "sync"
    assert Record.reads.get(pk=second.pg_row_id).fields == {
        "memo": "x (2)",
        "pair_of": str(first.pg_row_id),
    }


def test_sync_answers_200_for_a_failed_run_with_the_refusal(alice_api, deploy, inline_worker):
    from tests.processes.conftest import FAILS_AT_SECOND

    deploy(FAILS_AT_SECOND, "fails.ts")
    res = alice_api.post("/v1/processes/acme:fails-at-second?mode=sync", {}, format="json")
    assert res.status_code == 200, res.content
    body = res.json()
    assert (body["state"], body["outstanding"]) == ("failed", 0)
    assert body["reason"] == "step 'item' failed: REQUIRED_FIELD_MISSING: legacy_id is required"
    assert [s["disposition"] for s in body["steps"]] == ["confirmed", "failed"]
    assert body["steps"][1]["refusal"] == {
        "code": "REQUIRED_FIELD_MISSING",
        "field": "parent.legacy_id",
        "message": "legacy_id is required",
    }
