"""waitFor steps in-process (``pump`` plays the workers), events sent over HTTP: the run parks
``awaitingInput`` holding no worker; only an event of that name, matching, received after the run
was created resumes it — one that came before the wait step counts — and ``ctx.steps[id].event``
carries it; a timeout carries on with ``event: null``; the contract refuses a bad step by name.
The same journeys with real workers are in ``test_events_workers.py``."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from processes.contract import ContractInvalid
from processes.events.models import Event, EventWait
from processes.events.service import events_undelivered_deliver
from processes.models import ProcessRun
from processes.tasks import runs_sweep
from records.models import Record
from tests.conftest import client_for
from tests.processes.engine_support import deploy, invoke, ledger, pump
from tests.processes.event_support import trial_to_paid

pytestmark = pytest.mark.django_db


def _send(user, name: str, data: dict, key: str | None = None) -> dict:
    body = {"name": name, "data": data, **({"key": key} if key else {})}
    res = client_for(user).post("/v1/events", body, format="json")
    assert res.status_code == 202, res.content
    return res.json()


def _memos() -> list[str]:
    return sorted(
        Record.reads.filter(record_type="salesOrder").values_list("fields__memo", flat=True)
    )


def test_the_run_parks_awaiting_input_and_the_matching_event_resumes_it(admin_user, alice, bob):
    deploy(trial_to_paid(), by=admin_user)
    run = invoke("e:trial-to-paid", {"customer": "c1"}, alice)
    pump()
    run.refresh_from_db()
    assert (run.state, run.pending_reason, run.waiting_step) == ("running", "awaitingInput", "paid")
    assert run.lease_owner == ""  # parked: no worker holds it
    wait = EventWait.objects.get(run=run)
    assert (wait.event_name, wait.match, wait.state) == (
        "order.paid",
        {"customer": "c1"},
        "waiting",
    )
    assert run.wake_at == wait.expires_at  # the timeout is the run's due time
    assert (
        client_for(alice).get(f"/v1/processes/runs/{run.pk}").json()["run"]["pendingReason"]
        == "awaitingInput"
    )
    assert ledger(run) == []

    # Another customer's payment, or another event, resumes nothing.
    assert _send(bob, "order.paid", {"customer": "c2", "order": "SO-2"})["resumed"] == 0
    assert _send(bob, "order.refunded", {"customer": "c1"})["resumed"] == 0
    pump()
    run.refresh_from_db()
    assert run.pending_reason == "awaitingInput"

    # Anyone's matching event resumes it, once; the same event again (its key) resumes nothing.
    sent = _send(bob, "order.paid", {"customer": "c1", "order": "SO-1", "total": 9}, key="pay-1")
    assert (sent["resumed"], sent["runs"]) == (1, [])
    assert (
        _send(bob, "order.paid", {"customer": "c1", "order": "SO-1", "total": 9}, key="pay-1")[
            "resumed"
        ]
        == 1
    )  # the first send's count, replayed: nothing new
    pump()
    run.refresh_from_db()
    assert run.state == "committed", run.reason
    assert ledger(run) == [("paid", "confirmed", None), ("note", "confirmed", None)]
    event = Event.objects.get(pk=sent["eventId"])
    answer = run.ledger.get(step_id="paid").answer
    assert answer == {
        "event": {
            "eventId": str(event.pk),
            "name": "order.paid",
            "data": {"customer": "c1", "order": "SO-1", "total": 9},
            "key": "pay-1",
            "receivedAt": answer["event"]["receivedAt"],
        }
    }
    assert _memos() == [f"c1 paid SO-1 ({event.pk})"]
    assert (EventWait.objects.get(run=run).state, event.resumed) == ("received", 1)
    steps = client_for(alice).get(f"/v1/processes/runs/{run.pk}").json()["steps"]
    assert steps[0]["stepId"] == "paid"


def test_an_event_after_the_run_started_counts_even_before_the_wait_but_not_one_before_it(
    admin_user, alice
):
    deploy(trial_to_paid(), by=admin_user)
    early = _send(alice, "order.paid", {"customer": "c1", "order": "SO-0"})
    run = invoke("e:trial-to-paid", {"customer": "c1"}, alice)
    # Sent while the run is queued: after it was created, before it reached the wait.
    sent = _send(alice, "order.paid", {"customer": "c1", "order": "SO-1"})
    assert sent["resumed"] == 0  # nobody waited yet
    pump()
    run.refresh_from_db()
    assert run.state == "committed", run.reason
    assert _memos() == [f"c1 paid SO-1 ({sent['eventId']})"]
    assert EventWait.objects.get(run=run).event_id is not None
    assert str(EventWait.objects.get(run=run).event_id) == sent["eventId"]
    assert Event.objects.get(pk=sent["eventId"]).resumed == 1
    assert Event.objects.get(pk=early["eventId"]).resumed == 0


def test_without_match_any_event_of_the_name_resumes_and_one_event_resumes_every_wait(
    admin_user, alice, bob
):
    deploy(trial_to_paid(match=False), by=admin_user)
    runs = [invoke("e:trial-to-paid", {"customer": f"c{n}"}, alice) for n in range(3)]
    pump()
    sent = _send(bob, "order.paid", {"order": "SO-9"})
    assert sent["resumed"] == 3
    assert _send(bob, "order.paid", {"order": "SO-10"})["resumed"] == 0  # each wait once
    pump()
    assert [ProcessRun.objects.get(pk=r.pk).state for r in runs] == ["committed"] * 3
    assert _memos() == [f"c{n} paid SO-9 ({sent['eventId']})" for n in range(3)]


def test_the_timeout_carries_on_with_no_event(admin_user, alice):
    deploy(trial_to_paid(timeout="1s"), by=admin_user)
    run = invoke("e:trial-to-paid", {"customer": "c1"}, alice)
    pump()
    run.refresh_from_db()
    assert run.pending_reason == "awaitingInput"
    time.sleep(1.1)  # past the timeout (the wake-up itself is measured in the worker tests)
    pump()
    run.refresh_from_db()
    assert run.state == "committed", run.reason
    assert run.ledger.get(step_id="paid").answer == {"event": None}
    assert _memos() == ["c1 did not pay"]
    assert EventWait.objects.get(run=run).state == "timed_out"
    # An event once the wait timed out resumes nothing.
    assert _send(alice, "order.paid", {"customer": "c1"})["resumed"] == 0


def test_a_cancelled_waiting_run_closes_its_wait(admin_user, alice):
    deploy(trial_to_paid(), by=admin_user)
    run = invoke("e:trial-to-paid", {"customer": "c1"}, alice)
    pump()
    res = client_for(admin_user).post(f"/v1/processes/runs/{run.pk}/cancel")
    assert res.status_code == 200, res.content
    assert EventWait.objects.get(run=run).state == "closed"
    assert _send(alice, "order.paid", {"customer": "c1"})["resumed"] == 0
    pump()
    assert ProcessRun.objects.get(pk=run.pk).state == "cancelled"


def test_a_match_that_returns_no_object_fails_the_step(admin_user, alice):
    source = trial_to_paid().replace(
        "match: (ctx) => ({ customer: ctx.input.customer })", "match: (ctx) => ctx.input.customer"
    )
    deploy(source, by=admin_user)
    run = invoke("e:trial-to-paid", {"customer": "c1"}, alice)
    pump()
    run.refresh_from_db()
    assert run.state == "failed"
    assert ledger(run) == [("paid", "failed", "WAIT_MATCH_INVALID"), ("note", "skipped", None)]
    assert run.ledger.get(step_id="paid").refusal["field"] == "waitFor.match"
    assert not EventWait.objects.exists()


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        (" timeout: '14d'", "", "steps[0].waitFor.timeout"),
        ("timeout: '14d'", "timeout: '2 weeks'", "steps[0].waitFor.timeout"),
        ("event: 'order.paid'", "event: 'order paid'", "steps[0].waitFor.event"),
        ("event: 'order.paid',", "", "steps[0].waitFor.event"),
        ("timeout: '14d'", "timeout: '14d', every: 1", "steps[0].waitFor.every"),
        (
            "match: (ctx) => ({ customer: ctx.input.customer })",
            "match: { customer: 'c1' }",
            "steps[0].waitFor.match",
        ),
        ("{ id: 'paid',", "{ id: 'paid', recordType: 'salesOrder',", "steps[0].recordType"),
    ],
)
def test_the_contract_names_the_field_of_a_bad_wait_for(admin_user, old, new, field):
    source = trial_to_paid()
    assert old in source
    with pytest.raises(ContractInvalid) as refused:
        deploy(source.replace(old, new, 1), by=admin_user)
    assert refused.value.field == field, refused.value.message


def test_a_migration_may_not_wait_for_an_event(admin_user):
    source = trial_to_paid().replace(
        "  steps: [",
        "  eachRow: { outstanding: () => 'migration_item?select=legacy_id', key: 'legacy_id' },\n"
        "  steps: [",
    )
    with pytest.raises(ContractInvalid) as refused:
        deploy(source, by=admin_user)
    assert refused.value.field == "steps[0].waitFor"


def test_an_event_its_sender_did_not_live_to_deliver_is_delivered_once_by_the_sweeper(
    admin_user, alice
):
    deploy(trial_to_paid(), by=admin_user)
    runs = [invoke("e:trial-to-paid", {"customer": "c1"}, alice) for _ in range(2)]
    pump()
    # What a sender killed between its two transactions leaves: the event kept, not delivered.
    stranded = Event.objects.create(
        name="order.paid", data={"customer": "c1", "order": "SO-1"}, sender=alice
    )
    runs_sweep()  # the minute sweep leaves it to a sender that may still be delivering it
    assert Event.objects.get(pk=stranded.pk).delivered_at is None
    later = timezone.now() + timedelta(minutes=1)  # the sweep a minute on
    assert events_undelivered_deliver(later) == 1
    assert events_undelivered_deliver(later) == 0  # delivered: nothing twice
    stranded.refresh_from_db()
    assert (stranded.resumed, stranded.delivered_at is not None) == (2, True)
    pump()
    assert [ProcessRun.objects.get(pk=r.pk).state for r in runs] == ["committed"] * 2
    assert _memos() == [f"c1 paid SO-1 ({stranded.pk})"] * 2


def test_the_same_key_sent_again_delivers_what_the_first_send_did_not(admin_user, alice):
    deploy(trial_to_paid(), by=admin_user)
    run = invoke("e:trial-to-paid", {"customer": "c1"}, alice)
    pump()
    data = {"customer": "c1", "order": "SO-1"}
    stranded = Event.objects.create(name="order.paid", data=data, key="pay-1", sender=alice)
    again = _send(alice, "order.paid", data, key="pay-1")
    assert (again["eventId"], again["replayed"], again["resumed"]) == (str(stranded.pk), True, 1)
    assert _send(alice, "order.paid", data, key="pay-1")["resumed"] == 1  # still once
    pump()
    assert ProcessRun.objects.get(pk=run.pk).state == "committed"
    assert EventWait.objects.get(run=run).event_id == stranded.pk


def test_the_admin_lists_events_and_an_event_names_the_runs_it_resumed(admin_user, alice, operator):
    deploy(trial_to_paid(), by=admin_user)
    run = invoke("e:trial-to-paid", {"customer": "c1"}, alice)
    pump()
    sent = _send(alice, "order.paid", {"customer": "c1", "order": "SO-1"}, key="pay-1")
    listing = operator.get("/admin/processes/event/")
    assert listing.status_code == 200
    assert "order.paid" in listing.content.decode() and "pay-1" in listing.content.decode()
    page = operator.get(f"/admin/processes/event/{sent['eventId']}/change/").content.decode()
    assert (
        f'href="/admin/processes/processrun/{run.pk}/change/">{str(run.pk)[:8]}</a> (paid)' in page
    )
    assert operator.get("/admin/processes/event/add/").status_code == 403
