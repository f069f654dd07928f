"""Retry and redirect over HTTP (``pump`` plays the workers): a new run linked to the old one
(``linkedFrom`` / ``linkedTo``), a retry only of a run that ended failed, cancelled, rolled_back
or refused (409 ``process_run_not_retryable`` naming the state otherwise), a redirect checked like
an invoke (400 ``invalid_input``, nothing changed) that cancels the old run as cancel does. The same
with real workers: ``test_api_retry_redirect_workers.py``."""

from __future__ import annotations

import pytest

from kernel.audit import AuditEvent
from processes.invoke import run_invoke, run_start
from processes.models import Process, ProcessRun
from records.models import Record
from tests.conftest import client_for
from tests.processes.engine_support import deploy, ledger, pump
from tests.processes.sleep_support import sleeper

pytestmark = pytest.mark.django_db


def _two_notes(user, memo: str = "m") -> ProcessRun:
    return run_invoke(process_id="acme:two-notes", body={"memo": memo}, user=user)


def _read(client, run_id) -> dict:
    res = client.get(f"/v1/processes/runs/{run_id}")
    assert res.status_code == 200, res.content
    return res.json()["run"]


def test_retrying_a_cancelled_run_starts_the_same_input_again_linked(alice, alice_api, two_notes):
    old = _two_notes(alice, "again")
    assert alice_api.post(f"/v1/processes/runs/{old.pk}/cancel").status_code == 200
    res = alice_api.post(f"/v1/processes/runs/{old.pk}/retry")
    assert res.status_code == 202, res.content
    new_id = res.json()["runId"]
    assert res.json() == {"runId": new_id, "retryOf": str(old.pk)}
    new = ProcessRun.objects.get(pk=new_id)
    assert (new.process_id, new.input, new.invoked_by, new.state) == (
        "acme:two-notes",
        {"memo": "again"},
        alice,
        "queued",
    )
    pump()
    new.refresh_from_db()
    old.refresh_from_db()
    assert (old.state, new.state) == ("cancelled", "committed")
    assert (ledger(old), ledger(new)) == (
        [],
        [("first", "confirmed", None), ("second", "confirmed", None)],
    )
    assert _read(alice_api, new_id)["linkedFrom"] == {"runId": str(old.pk), "how": "retry"}
    assert _read(alice_api, new_id)["linkedTo"] == []
    assert _read(alice_api, old.pk)["linkedFrom"] is None
    assert _read(alice_api, old.pk)["linkedTo"] == [{"runId": new_id, "how": "retry"}]
    event = AuditEvent.objects.get(action="run.retried")
    assert (event.target, event.actor, event.after) == (f"run:{old.pk}", alice, {"runId": new_id})


def test_a_failed_a_rolled_back_and_a_refused_run_are_retried(
    admin_user, alice, alice_api, two_notes
):
    deploy(sleeper(sleep="() => 'soon'"), by=admin_user)
    failed = run_invoke(process_id="t:nap", body={"memo": "x"}, user=alice)
    rolled = _two_notes(alice, "undo me")
    pump()
    assert alice_api.post(f"/v1/processes/runs/{rolled.pk}/rollback").status_code == 202
    Process.objects.filter(pk="acme:two-notes").update(is_enabled=False)
    refused = run_start(process_id="acme:two-notes", body={"memo": "later"}, user=alice)
    pump()
    Process.objects.filter(pk="acme:two-notes").update(is_enabled=True)
    states = [ProcessRun.objects.get(pk=r.pk).state for r in (failed, rolled, refused)]
    assert states == ["failed", "rolled_back", "refused"]
    for old in (failed, rolled, refused):
        res = alice_api.post(f"/v1/processes/runs/{old.pk}/retry")
        assert (res.status_code, res.json()["retryOf"]) == (202, str(old.pk)), res.content
    pump()
    retried = ProcessRun.objects.filter(linked_how="retry").order_by("created_at")
    assert [(r.linked_from_id, r.state) for r in retried] == [
        (failed.pk, "failed"),  # the same input fails the same way
        (rolled.pk, "committed"),
        (refused.pk, "committed"),
    ]
    for run in retried[1:]:  # a fresh ledger of their own, the same input as the old run
        assert ledger(run) == [("first", "confirmed", None), ("second", "confirmed", None)]
        assert run.input == ProcessRun.objects.get(pk=run.linked_from_id).input


@pytest.mark.parametrize("state", ["queued", "running", "committed"])
def test_retrying_any_other_run_is_409_naming_its_state(alice, alice_api, two_notes, state):
    old = _two_notes(alice)
    ProcessRun.objects.filter(pk=old.pk).update(state=state)
    res = alice_api.post(f"/v1/processes/runs/{old.pk}/retry")
    assert res.status_code == 409
    assert res.json()["error"] == "process_run_not_retryable"
    assert res.json()["state"] == state
    assert state in res.json()["message"]
    assert ProcessRun.objects.count() == 1
    assert not AuditEvent.objects.filter(action="run.retried").exists()


def test_a_refused_run_whose_input_still_fails_the_schema_answers_400_and_starts_nothing(
    alice, alice_api, two_notes
):
    refused = run_start(process_id="acme:two-notes", body={"memo": 7}, user=alice)
    assert refused.state == "refused"
    res = alice_api.post(f"/v1/processes/runs/{refused.pk}/retry")
    assert (res.status_code, res.json()["error"], res.json()["rejection"]["field"]) == (
        400,
        "invalid_input",
        "memo",
    )
    assert ProcessRun.objects.count() == 1


def test_redirecting_a_queued_run_cancels_it_and_starts_the_new_input(alice, alice_api, two_notes):
    old = _two_notes(alice, "wrong")
    res = alice_api.post(f"/v1/processes/runs/{old.pk}/redirect", {"memo": "right"}, format="json")
    assert res.status_code == 202, res.content
    new_id = res.json()["runId"]
    assert res.json() == {"runId": new_id, "redirectOf": str(old.pk)}
    old.refresh_from_db()
    assert (old.state, old.reason, old.outstanding) == ("cancelled", "cancelled by alice", 2)
    pump()
    assert ProcessRun.objects.get(pk=new_id).state == "committed"
    assert sorted(Record.reads.values_list("fields__memo", flat=True)) == ["right", "right (2)"]
    assert _read(alice_api, new_id)["linkedFrom"] == {"runId": str(old.pk), "how": "redirect"}
    assert _read(alice_api, old.pk)["linkedTo"] == [{"runId": new_id, "how": "redirect"}]
    actions = set(
        AuditEvent.objects.filter(target=f"run:{old.pk}").values_list("action", flat=True)
    )
    assert actions == {"run.redirected", "run.cancelled"}


def test_redirecting_a_sleeping_run_ends_it_and_an_ended_one_is_left_as_it_was(
    admin_user, alice, alice_api, two_notes
):
    deploy(sleeper(sleep="'1h'"), by=admin_user)
    asleep = run_invoke(process_id="t:nap", body={"memo": "zz"}, user=alice)
    done = _two_notes(alice, "done")
    pump()
    for old, body in ((asleep, {"memo": "awake"}), (done, {"memo": "more"})):
        res = alice_api.post(f"/v1/processes/runs/{old.pk}/redirect", body, format="json")
        assert res.status_code == 202, res.content
    asleep.refresh_from_db()
    done.refresh_from_db()
    assert (asleep.state, done.state) == ("cancelled", "committed")
    assert _read(alice_api, done.pk)["linkedTo"][0]["how"] == "redirect"


@pytest.mark.parametrize(
    ("body", "field"), [({"memo": 7}, "memo"), ({}, "memo"), ({"memo": "a", "x": 1}, "x")]
)
def test_a_redirect_the_schema_refuses_is_400_and_changes_nothing(
    alice, alice_api, two_notes, body, field
):
    old = _two_notes(alice)
    res = alice_api.post(f"/v1/processes/runs/{old.pk}/redirect", body, format="json")
    assert (res.status_code, res.json()["error"], res.json()["rejection"]["field"]) == (
        400,
        "invalid_input",
        field,
    )
    old.refresh_from_db()
    assert (old.state, old.cancel_requested, ProcessRun.objects.count()) == ("queued", False, 1)
    assert not AuditEvent.objects.exists()


def test_steering_someone_elses_run_is_404_and_a_token_needs_an_admin_owner(alice, bob, two_notes):
    old = _two_notes(alice)
    ProcessRun.objects.filter(pk=old.pk).update(state="failed")
    bob_api = client_for(bob)
    assert bob_api.post(f"/v1/processes/runs/{old.pk}/retry").status_code == 404
    res = bob_api.post(f"/v1/processes/runs/{old.pk}/redirect", {"memo": "x"}, format="json")
    assert res.status_code == 404
    assert ProcessRun.objects.count() == 1


def test_an_administrator_steering_someones_run_starts_it_as_its_invoker(
    admin_user, alice, two_notes
):
    old = _two_notes(alice)
    ProcessRun.objects.filter(pk=old.pk).update(state="failed")
    admin_api = client_for(admin_user)
    retried = admin_api.post(f"/v1/processes/runs/{old.pk}/retry")
    redirected = admin_api.post(
        f"/v1/processes/runs/{old.pk}/redirect", {"memo": "r"}, format="json"
    )
    assert (retried.status_code, redirected.status_code) == (202, 202)
    invokers = ProcessRun.objects.filter(
        pk__in=[retried.json()["runId"], redirected.json()["runId"]]
    ).values_list("invoked_by", flat=True)
    assert list(invokers) == [alice.pk, alice.pk]  # the runs write with alice's reach, not root's
    actors = AuditEvent.objects.filter(action__in=["run.retried", "run.redirected"])
    assert set(actors.values_list("actor", flat=True)) == {admin_user.pk}
