"""``POST /v1/events`` over HTTP: the answer, the key that makes a send idempotent (per sender, a
unique constraint — two sends at once make one event), every refusal naming its field with nothing
stored, the token's scope, ``/v1/rest/event`` scoped to the sender and ``turbobase events send``."""

from __future__ import annotations

import pytest

from kernel.models import token_issue
from processes.events.models import Event
from tests.concurrency import race
from tests.conftest import cli, client_for, is_postgres

pytestmark = pytest.mark.django_db


def _send(client, body: dict, status: int = 202) -> dict:
    res = client.post("/v1/events", body, format="json")
    assert res.status_code == status, res.content
    return res.json()


def test_an_event_is_kept_and_answered(alice, alice_api):
    body = _send(alice_api, {"name": "order.paid", "data": {"order": "SO-1", "total": 12.5}})
    assert body == {
        "eventId": body["eventId"],
        "name": "order.paid",
        "runs": [],
        "resumed": 0,
        "replayed": False,
    }
    event = Event.objects.get(pk=body["eventId"])
    assert (event.name, event.data, event.key, event.sender) == (
        "order.paid",
        {"order": "SO-1", "total": 12.5},
        None,
        alice,
    )
    assert event.delivered_at is not None
    # No data is an empty object; keyless sends are separate events.
    again = _send(alice_api, {"name": "order.paid"})
    assert again["eventId"] != body["eventId"]
    assert Event.objects.get(pk=again["eventId"]).data == {}


def test_the_same_key_answers_the_same_event_and_another_sender_has_their_own(alice_api, bob_api):
    first = _send(alice_api, {"name": "order.paid", "data": {"n": 1}, "key": "pay-1"})
    again = _send(alice_api, {"name": "order.paid", "data": {"n": 1}, "key": "pay-1"})
    assert again == {**first, "replayed": True}
    bobs = _send(bob_api, {"name": "order.paid", "data": {"n": 1}, "key": "pay-1"})
    assert bobs["eventId"] != first["eventId"] and bobs["replayed"] is False
    assert Event.objects.count() == 2
    # The same key with other data is a mistake, not the same event: 409, nothing kept.
    other = alice_api.post(
        "/v1/events", {"name": "order.paid", "data": {"n": 2}, "key": "pay-1"}, format="json"
    )
    assert other.status_code == 409
    assert other.json()["error"] == "event_key_reused"
    assert other.json()["eventId"] == first["eventId"]
    assert Event.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_two_sends_of_one_key_at_once_make_one_event(alice):
    if not is_postgres():
        pytest.skip("concurrent writers need PostgreSQL")
    tabs = [client_for(alice) for _ in range(4)]
    answers = race(
        4,
        lambda i: tabs[i].post(
            "/v1/events", {"name": "order.paid", "data": {"n": 1}, "key": "k"}, format="json"
        ),
    )
    assert [a.status_code for a in answers] == [202] * 4, answers
    assert len({a.json()["eventId"] for a in answers}) == 1
    assert sorted(a.json()["replayed"] for a in answers) == [False, True, True, True]
    assert Event.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"data": {}}, "name"),
        ({"name": ""}, "name"),
        ({"name": 7}, "name"),
        ({"name": "order paid"}, "name"),
        ({"name": "a" * 201}, "name"),
        ({"name": "order.paid", "data": [1]}, "data"),
        ({"name": "order.paid", "data": "x"}, "data"),
        ({"name": "order.paid", "data": {"blob": "x" * 100_001}}, "data"),
        ({"name": "order.paid", "data": {"memo": "a\x00b"}}, "data.memo"),
        ({"name": "order.paid\x00"}, "name"),
        ({"name": "order.paid", "key": ""}, "key"),
        ({"name": "order.paid", "key": 5}, "key"),
        ({"name": "order.paid", "key": "k" * 201}, "key"),
        ({"name": "order.paid", "when": "now"}, "when"),
    ],
)
def test_bad_input_is_400_naming_the_field_and_nothing_is_kept(alice_api, body, field):
    res = alice_api.post("/v1/events", body, format="json")
    assert res.status_code == 400, res.content
    assert res.json()["rejection"]["field"] == field
    assert Event.objects.count() == 0


def test_a_token_needs_data_write(alice):
    client = client_for(alice)
    _, reader = token_issue(user=alice, scopes=["data:read"])
    _, writer = token_issue(user=alice, scopes=["data:write"])
    client.force_authenticate(user=None)
    refused = client.post(
        "/v1/events", {"name": "order.paid"}, format="json", HTTP_AUTHORIZATION=f"Bearer {reader}"
    )
    assert (refused.status_code, refused.json()["scope"]) == (403, "data:write")
    sent = client.post(
        "/v1/events", {"name": "order.paid"}, format="json", HTTP_AUTHORIZATION=f"Bearer {writer}"
    )
    assert sent.status_code == 202
    assert Event.objects.get().sender == alice
    assert client.post("/v1/events", {"name": "order.paid"}, format="json").status_code == 401


def test_rest_event_is_scoped_to_the_sender_and_administrators_see_all(
    alice, alice_api, bob_api, admin_api
):
    mine = _send(alice_api, {"name": "order.paid", "data": {"n": 1}, "key": "a"})
    theirs = _send(bob_api, {"name": "lead.created", "data": {"n": 2}})
    rows = alice_api.get("/v1/rest/event?select=event_id,name,data,key,sender").json()
    assert rows == [
        {
            "event_id": mine["eventId"],
            "name": "order.paid",
            "data": {"n": 1},
            "key": "a",
            "sender": alice.pk,
        }
    ]
    assert [r["event_id"] for r in bob_api.get("/v1/rest/event?select=event_id").json()] == [
        theirs["eventId"]
    ]
    everything = admin_api.get("/v1/rest/event?select=name&order=received_at").json()
    assert everything == [{"name": "order.paid"}, {"name": "lead.created"}]
    assert alice_api.get("/v1/rest/event?name=eq.lead.created").json() == []


@pytest.mark.django_db(transaction=True)
def test_cli_events_send(live_server, monkeypatch, alice, capsys):
    _, raw = token_issue(user=alice, scopes=["data:write"])
    monkeypatch.setenv("TURBOBASE_URL", live_server.url)
    monkeypatch.setenv("TURBOBASE_TOKEN", raw)
    code, out, err = cli(
        capsys, "events", "send", "order.paid", "--data", '{"n": 1}', "--key", "k1"
    )
    event = Event.objects.get()
    assert (code, err) == (0, "")
    assert out == f"event {event.pk} order.paid: started 0 runs, resumed 0 waits\n"
    code, out, _ = cli(capsys, "events", "send", "order.paid", "--data", '{"n": 1}', "--key", "k1")
    assert code == 0 and out.endswith("(sent before with this key: nothing new)\n")
    code, out, _ = cli(capsys, "--json", "events", "send", "lead.created")
    assert code == 0 and '"name": "lead.created"' in out
    code, _, err = cli(capsys, "events", "send", "order.paid", "--data", "[1]")
    assert code == 1 and "400" in err and "data must be a JSON object" in err
    code, _, err = cli(capsys, "events", "send", "order.paid", "--data", "{nope")
    assert code == 1 and err.startswith("turbobase: --data is not JSON: ")
    assert Event.objects.count() == 2
    assert (Event.objects.get(key="k1").data, Event.objects.get(name="lead.created").data) == (
        {"n": 1},
        {},
    )
