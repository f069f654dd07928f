"""POST /v1/batch: several reads in one request, as the caller, each under the batch row cap."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from guardrails.settings import setting_set
from records.boundary import record_create
from records.models import Record
from records.trail import Actor

pytestmark = pytest.mark.django_db


def _create(user, record_type: str, parent: dict) -> Record:
    return record_create(actor=Actor(user=user), record_type=record_type, parent=parent).record


@pytest.fixture
def rows(alice, bob):
    for i in range(4):
        _create(alice, "legacy_customer", {"legacy_id": f"A{i}", "rank": i})
    _create(bob, "legacy_customer", {"legacy_id": "B0", "rank": 0})
    _create(alice, "entity", {"entity_type": "vendor", "terms_id": "NET30"})


def batch(api, reads):
    return api.post("/v1/batch", {"reads": reads}, format="json")


def test_each_read_answers_in_order_as_the_caller(alice_api, bob_api, rows):
    reads = [
        "legacy_customer?select=legacy_id&order=rank.desc",
        "entity?select=terms_id&entity_type=eq.vendor",
    ]
    res = batch(alice_api, reads)
    assert res.status_code == 200
    assert res.json() == {
        "results": [
            {
                "rows": [
                    {"legacy_id": "A3"},
                    {"legacy_id": "A2"},
                    {"legacy_id": "A1"},
                    {"legacy_id": "A0"},
                ],
                "truncated": False,
            },
            {"rows": [{"terms_id": "NET30"}], "truncated": False},
        ]
    }
    assert batch(bob_api, reads[:1]).json() == {
        "results": [{"rows": [{"legacy_id": "B0"}], "truncated": False}]
    }


def test_each_read_is_capped_and_says_it_was_truncated(alice_api, rows):
    setting_set("processes.batch_max_rows", 3)
    res = batch(
        alice_api,
        [
            "legacy_customer?select=legacy_id&order=rank",
            "legacy_customer?select=legacy_id&limit=2",
            "legacy_customer?select=legacy_id&rank=gte.1&order=rank",
        ],
    )
    assert res.json() == {
        "results": [
            {
                "rows": [{"legacy_id": "A0"}, {"legacy_id": "A1"}, {"legacy_id": "A2"}],
                "truncated": True,
            },
            {"rows": [{"legacy_id": "A0"}, {"legacy_id": "A1"}], "truncated": False},
            {
                "rows": [{"legacy_id": "A1"}, {"legacy_id": "A2"}, {"legacy_id": "A3"}],
                "truncated": False,
            },
        ]
    }


def test_a_limit_above_the_cap_is_still_capped(alice_api, rows):
    setting_set("processes.batch_max_rows", 2)
    res = batch(alice_api, ["legacy_customer?select=legacy_id&order=rank&limit=10&offset=1"])
    assert res.json()["results"] == [
        {"rows": [{"legacy_id": "A1"}, {"legacy_id": "A2"}], "truncated": True}
    ]


def test_one_bad_read_is_its_own_entry_and_the_others_answer(alice_api, rows):
    res = batch(
        alice_api,
        [
            "legacy_customer?limit=many",
            "rpc/do_it",
            "unknownType?select=a",
            "entity?select=terms_id",
        ],
    )
    assert res.status_code == 200
    bad_column, rpc, unknown, good = res.json()["results"]
    assert bad_column["error"]["status"] == 400
    assert (bad_column["error"]["error"], bad_column["error"]["rejection"]["field"]) == (
        "invalid_query",
        "limit",
    )
    assert (rpc["error"]["status"], rpc["error"]["error"]) == (400, "rpc_not_supported")
    assert unknown["error"]["status"] == 404
    assert good == {"rows": [{"terms_id": "NET30"}], "truncated": False}


@pytest.mark.parametrize(
    "body, field",
    [
        ([], "body"),
        ({}, "reads"),
        ({"reads": []}, "reads"),
        ({"reads": "entity"}, "reads"),
        ({"reads": ["entity", 3]}, "reads[1]"),
        ({"reads": ["entity", "  "]}, "reads[1]"),
        ({"reads": ["entity"], "extra": 1}, "extra"),
    ],
)
def test_a_bad_body_is_400_naming_the_field(alice_api, body, field):
    res = alice_api.post("/v1/batch", body, format="json")
    assert res.status_code == 400
    assert res.json()["error"] == "invalid_batch"
    assert res.json()["rejection"]["field"] == field


def test_too_many_reads_is_400(alice_api, settings):
    settings.BATCH_MAX_READS = 2
    res = batch(alice_api, ["entity", "entity", "entity"])
    assert (res.status_code, res.json()["rejection"]["field"]) == (400, "reads")


def test_a_batch_needs_credentials(rows):
    assert APIClient().post("/v1/batch", {"reads": ["entity"]}, format="json").status_code == 401
