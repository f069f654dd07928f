"""``GET /v1/guardrails/held-deletes`` filters: status, recordType, processRunId, requested dates.

A bad value or an unknown parameter is a 400 ``invalid_request`` naming the parameter, and
nothing is decided by a read.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from guardrails.models import HeldDelete, HeldStatus
from records.boundary import record_create, record_delete
from records.trail import Actor

pytestmark = pytest.mark.django_db

BASE = "/v1/guardrails/held-deletes"


def _held(user, record_type: str = "customer", *, at: int, **actor) -> HeldDelete:
    """A hold requested at ``at`` o'clock on 2026-11-30 (UTC)."""
    parent = {"company_name": f"Co {at}"} if record_type == "customer" else {"name": f"E {at}"}
    record = record_create(actor=Actor(user=user), record_type=record_type, parent=parent).record
    result = record_delete(
        actor=Actor(user=user, **actor), record_type=record_type, pg_row_id=record.pk
    )
    assert result.outcome == "held"
    held = HeldDelete.objects.get(pg_row_id=record.pk)
    HeldDelete.objects.filter(pk=held.pk).update(
        requested_at=datetime(2026, 11, 30, at, tzinfo=UTC)
    )
    return held


@pytest.fixture
def holds(alice, admin_api) -> dict[str, HeldDelete]:
    holds = {
        "nine": _held(alice, at=9, process_run_id="run-1", process_step="po"),
        "ten": _held(alice, "entity", at=10),
        "eleven": _held(alice, at=11, process_run_id="run-1", process_step="bill"),
        "twelve": _held(alice, at=12),
    }
    assert admin_api.post(f"{BASE}/{holds['twelve'].pk}/reject", format="json").status_code == 200
    return holds


def _ids(res) -> list[int]:
    assert res.status_code == 200
    return [row["id"] for row in res.json()["heldDeletes"]]


def test_status_lists_one_status(admin_api, holds):
    assert _ids(admin_api.get(BASE, {"status": "rejected"})) == [holds["twelve"].pk]
    pending = [holds[name].pk for name in ("nine", "ten", "eleven")]
    assert _ids(admin_api.get(BASE, {"status": "pending"})) == pending


def test_record_type_lists_one_type(admin_api, holds):
    assert _ids(admin_api.get(BASE, {"recordType": "entity"})) == [holds["ten"].pk]


def test_process_run_id_lists_what_one_run_asked_for(admin_api, holds):
    assert _ids(admin_api.get(BASE, {"processRunId": "run-1"})) == [
        holds["nine"].pk,
        holds["eleven"].pk,
    ]


def test_requested_after_and_before_are_a_half_open_window(admin_api, holds):
    window = {"requestedAfter": "2026-11-30T10:00:00Z", "requestedBefore": "2026-11-30T12:00:00Z"}
    assert _ids(admin_api.get(BASE, window)) == [holds["ten"].pk, holds["eleven"].pk]
    after = admin_api.get(BASE, {"requestedAfter": "2026-11-30T12:00:00Z"})
    assert _ids(after) == [holds["twelve"].pk]


def test_filters_combine(admin_api, holds):
    both = {"status": "pending", "recordType": "customer", "requestedAfter": "2026-11-30T10:00:00Z"}
    assert _ids(admin_api.get(BASE, both)) == [holds["eleven"].pk]


def _refused(res, field: str, message: str) -> None:
    assert res.status_code == 400
    assert res.json() == {
        "error": "invalid_request",
        "rejection": {"code": "INVALID_FILTER", "field": field, "message": message},
    }


def test_bad_values_are_refused_by_name_and_decide_nothing(admin_api, holds):
    _refused(
        admin_api.get(BASE, {"status": "maybe"}),
        "status",
        "status: Select a valid choice. maybe is not one of the available choices.",
    )
    _refused(
        admin_api.get(BASE, {"requestedAfter": "noon"}),
        "requestedAfter",
        "requestedAfter: Enter a valid date/time.",
    )
    _refused(
        admin_api.get(BASE, {"requestedBefore": "2026-02-30T00:00:00Z"}),
        "requestedBefore",
        "requestedBefore: Enter a valid date/time.",
    )
    _refused(
        admin_api.get(BASE, {"requestedAfter": "9999-12-31T23:59:59-10:00"}),  # past 9999 in UTC
        "requestedAfter",
        "requestedAfter: Enter a valid date/time.",
    )
    _refused(
        admin_api.get(BASE, {"state": "pending"}),
        "state",
        "state is not a filter of this list "
        "(processRunId, recordType, requestedAfter, requestedBefore, status)",
    )
    counts = HeldDelete.objects.values_list("status", flat=True)
    assert sorted(counts) == [HeldStatus.PENDING] * 3 + [HeldStatus.REJECTED]


def test_a_person_who_is_not_an_administrator_is_refused_before_the_filters(alice_api):
    res = alice_api.get(BASE, {"status": "maybe"})
    assert (res.status_code, res.json()["error"]) == (403, "admin_required")
