"""``GET /v1/rest/record_write_state``: the settle conflict's source id, read where the seed says."""

from __future__ import annotations

import pytest

from sources.scripting import sandbox_script_set
from tests.conftest import client_for, make_user
from tests.sources.conftest import drain

pytestmark = pytest.mark.django_db

QUERY = (
    "/v1/rest/record_write_state?select=pg_row_id,external_id,reason_code,status"
    "&reason_code=eq.write_settle_conflict"
)


def _conflict(api) -> str:
    sandbox_script_set("purchaseOrder", settle_conflict=True)
    created = api.post(
        "/v1/data/purchaseOrder",
        {"parent": {"entity_id": "V1"}, "lines": [{"item": "x"}]},
        format="json",
    ).json()
    drain("purchaseOrder")
    return created["pgRowId"]


def test_the_writer_reads_the_source_id_of_a_settle_conflict(alice_api):
    pg_row_id = _conflict(alice_api)
    res = alice_api.get(QUERY)
    assert res.status_code == 200, res.content
    assert res.json() == [
        {
            "pg_row_id": pg_row_id,
            "external_id": "PO-1041",
            "reason_code": "write_settle_conflict",
            "status": "settle_conflict",
        }
    ]


def test_write_states_are_scoped_like_their_records(alice, alice_api, admin_api):
    pg_row_id = _conflict(alice_api)
    outsider = client_for(make_user("mallory"))  # purchaseOrder reads by group: not alice's group
    assert outsider.get(QUERY).json() == []
    assert [row["pg_row_id"] for row in admin_api.get(QUERY).json()] == [pg_row_id]


def test_an_unknown_column_is_refused_by_name(alice_api):
    res = alice_api.get("/v1/rest/record_write_state?select=payload")
    assert res.status_code == 400
    assert res.json()["rejection"]["code"] == "UNKNOWN_COLUMN"
    assert res.json()["rejection"]["field"] == "select"
