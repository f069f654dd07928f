"""``POST /v1/processes/:id`` with ``Idempotency-Key``: a retry answers the first run (200,
``replayed``), never a second; the same key with another input is 409; keys are the caller's."""

from __future__ import annotations

import pytest
from django.db import connection

from processes.models import ProcessRun
from records.models import Record
from tests.processes.test_api_invoke import URL

pytestmark = pytest.mark.django_db


def _post(client, body, key, mode=""):
    url = URL + (f"?mode={mode}" if mode else "")
    return client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY=key)


def test_the_same_key_twice_answers_the_first_run_and_starts_no_other(alice_api, two_notes):
    first = _post(alice_api, {"memo": "m"}, "k-1")
    assert first.status_code == 202, first.content
    again = _post(alice_api, {"memo": "m"}, "k-1")
    assert again.status_code == 200, again.content
    run = ProcessRun.objects.get()
    assert again.json() == {**first.json(), "replayed": True}
    assert run.idempotency_key.endswith(":k-1")


def test_a_sync_retry_answers_the_settled_run_with_its_steps(alice_api, two_notes, inline_worker):
    first = _post(alice_api, {"memo": "s"}, "sync-1", mode="sync")
    assert first.status_code == 200, first.content
    assert first.json()["state"] == "committed"
    again = _post(alice_api, {"memo": "s"}, "sync-1", mode="sync")
    assert again.status_code == 200, again.content
    assert again.json() == {**first.json(), "replayed": True}
    assert ProcessRun.objects.count() == 1
    assert Record.reads.count() == 2  # the two notes, once


def test_the_same_key_with_another_input_or_mode_is_409_and_writes_nothing(alice_api, two_notes):
    first = _post(alice_api, {"memo": "a"}, "k-2")
    run_id = first.json()["runId"]
    for body, mode in (({"memo": "b"}, ""), ({"memo": "a"}, "sync")):
        res = _post(alice_api, body, "k-2", mode=mode)
        assert res.status_code == 409, res.content
        answer = res.json()
        assert (answer["error"], answer["runId"]) == ("idempotency_key_reused", run_id)
        assert run_id in answer["message"]
    assert ProcessRun.objects.count() == 1


def test_keys_are_the_callers_own(alice_api, bob_api, two_notes):
    mine = _post(alice_api, {"memo": "a"}, "shared")
    theirs = _post(bob_api, {"memo": "a"}, "shared")
    assert (mine.status_code, theirs.status_code) == (202, 202)
    assert mine.json()["runId"] != theirs.json()["runId"]
    assert ProcessRun.objects.count() == 2


@pytest.mark.parametrize("key", ["x" * 256])
def test_a_bad_key_is_400_naming_the_header_and_starts_nothing(alice_api, two_notes, key):
    res = _post(alice_api, {"memo": "a"}, key)
    assert res.status_code == 400, res.content
    assert res.json()["rejection"]["field"] == "Idempotency-Key"
    assert ProcessRun.objects.count() == 0


def test_without_a_key_every_invoke_is_a_run(alice_api, two_notes):
    for _ in range(2):
        assert alice_api.post(URL, {"memo": "a"}, format="json").status_code == 202
    assert ProcessRun.objects.count() == 2


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_invokes_with_one_key_write_one_run(alice, two_notes):
    from rest_framework.test import APIClient

    from tests.concurrency import race

    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL")

    def invoke(_: int) -> tuple[int, str]:
        client = APIClient()
        client.force_authenticate(alice)
        res = _post(client, {"memo": "race"}, "race-1")
        return res.status_code, res.json()["runId"]

    answers = race(2, invoke)
    assert ProcessRun.objects.count() == 1
    assert sorted(code for code, _ in answers) == [200, 202]
    assert len({run_id for _, run_id in answers}) == 1
