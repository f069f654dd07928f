"""``GET /v1/processes/queue`` filters: state, processId, createdAfter/createdBefore.

Each narrows the listed runs; ``state`` leaves the counts whole. A bad value or an unknown
parameter is a 400 ``invalid_request`` naming the parameter.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from processes.invoke import run_invoke
from processes.models import ProcessRun
from processes.steering import run_cancel
from tests.processes.conftest import FAILS_AT_SECOND, drain_runs

pytestmark = pytest.mark.django_db

ZERO = {
    "queued": 0,
    "running": 0,
    "committed": 0,
    "failed": 0,
    "rolled_back": 0,
    "cancelled": 0,
    "refused": 0,
}
QUEUE = "/v1/processes/queue"


def _ids(body: dict) -> list[str]:
    return [run["runId"] for run in body["runs"]]


@pytest.fixture
def three_states(alice, deploy, two_notes) -> dict[str, ProcessRun]:
    """One committed and one failed run (drained), one cancelled, one still queued."""
    deploy(FAILS_AT_SECOND, "fails.ts")
    committed = run_invoke(process_id="acme:two-notes", body={"memo": "a"}, user=alice)
    failed = run_invoke(process_id="acme:fails-at-second", body={}, user=alice)
    drain_runs()
    cancelled = run_invoke(process_id="acme:two-notes", body={"memo": "b"}, user=alice)
    run_cancel(user=alice, run_id=str(cancelled.run_id))
    queued = run_invoke(process_id="acme:two-notes", body={"memo": "c"}, user=alice)
    return {"committed": committed, "failed": failed, "cancelled": cancelled, "queued": queued}


def test_state_narrows_the_list_and_the_counts_stay_whole(alice_api, three_states):
    body = alice_api.get(QUEUE, {"state": "failed"}).json()
    assert _ids(body) == [str(three_states["failed"].run_id)]
    assert body["counts"] == {**ZERO, "queued": 1, "committed": 1, "failed": 1, "cancelled": 1}
    assert body["truncated"] is False


def test_state_may_be_repeated(alice_api, three_states):
    body = alice_api.get(f"{QUEUE}?state=failed&state=cancelled").json()
    assert _ids(body) == [str(three_states["cancelled"].run_id), str(three_states["failed"].run_id)]


def test_process_id_lists_one_process_runs_and_counts_only_them(alice_api, three_states):
    body = alice_api.get(QUEUE, {"processId": "acme:two-notes"}).json()
    assert _ids(body) == [str(three_states[s].run_id) for s in ("queued", "cancelled", "committed")]
    assert body["counts"] == {**ZERO, "queued": 1, "committed": 1, "cancelled": 1}
    nothing = alice_api.get(QUEUE, {"processId": "acme:none"}).json()
    assert nothing == {"runs": [], "counts": ZERO, "truncated": False}


def test_created_after_and_before_are_a_half_open_window(alice_api, three_states):
    hours = {"committed": 9, "failed": 10, "cancelled": 11, "queued": 12}
    for state, hour in hours.items():
        ProcessRun.objects.filter(pk=three_states[state].pk).update(
            created_at=datetime(2026, 11, 30, hour, tzinfo=UTC)
        )
    window = {"createdAfter": "2026-11-30T10:00:00Z", "createdBefore": "2026-11-30T12:00:00Z"}
    body = alice_api.get(QUEUE, window).json()
    assert _ids(body) == [str(three_states["cancelled"].run_id), str(three_states["failed"].run_id)]
    assert body["counts"] == {**ZERO, "failed": 1, "cancelled": 1}
    after = alice_api.get(QUEUE, {"createdAfter": "2026-11-30T11:00:00Z"}).json()
    assert _ids(after) == [
        str(three_states["queued"].run_id),
        str(three_states["cancelled"].run_id),
    ]
    before_day = alice_api.get(QUEUE, {"createdBefore": "2026-11-30"}).json()  # a date: midnight
    assert before_day["runs"] == []


def test_filters_combine_with_the_lane_and_each_other(alice, alice_api, three_states):
    sync = run_invoke(process_id="acme:two-notes", body={"memo": "s"}, user=alice, mode="sync")
    body = alice_api.get(
        QUEUE, {"mode": "sync", "state": "queued", "processId": "acme:two-notes"}
    ).json()
    assert _ids(body) == [str(sync.run_id)]
    assert body["counts"] == {**ZERO, "queued": 1}


def test_truncated_is_about_the_listed_states(alice, alice_api, two_notes, settings):
    settings.PROCESSES_QUEUE_MAX_RUNS = 1
    first = run_invoke(process_id="acme:two-notes", body={"memo": "1"}, user=alice)
    run_cancel(user=alice, run_id=str(first.run_id))
    run_invoke(process_id="acme:two-notes", body={"memo": "2"}, user=alice)
    assert alice_api.get(QUEUE, {"state": "cancelled"}).json()["truncated"] is False
    assert alice_api.get(QUEUE).json()["truncated"] is True


def test_filters_are_scoped_like_the_queue(bob_api, three_states):
    body = bob_api.get(QUEUE, {"processId": "acme:two-notes", "state": "queued"}).json()
    assert body == {"runs": [], "counts": ZERO, "truncated": False}


def _refused(res, field: str, message: str) -> None:
    assert res.status_code == 400
    assert res.json() == {
        "error": "invalid_request",
        "rejection": {"code": "INVALID_FILTER", "field": field, "message": message},
    }


def test_a_state_that_is_not_a_run_state_is_refused_by_name(alice_api, three_states):
    _refused(
        alice_api.get(QUEUE, {"state": "done"}),
        "state",
        "state: Select a valid choice. done is not one of the available choices.",
    )


def test_a_date_that_is_not_iso_8601_is_refused_by_name(alice_api):
    _refused(
        alice_api.get(QUEUE, {"createdAfter": "yesterday"}),
        "createdAfter",
        "createdAfter: Enter a valid date/time.",
    )
    _refused(
        alice_api.get(QUEUE, {"createdBefore": "2026-13-40"}),
        "createdBefore",
        "createdBefore: Enter a valid date/time.",
    )


def test_a_time_with_no_utc_instant_is_refused_by_name_not_a_500(alice_api):
    # Parses as ISO 8601, but in UTC it would be past year 9999 (or before year 1).
    for name, value in (
        ("createdAfter", "9999-12-31T23:59:59-10:00"),
        ("createdBefore", "0001-01-01T00:00:00+10:00"),
    ):
        _refused(alice_api.get(QUEUE, {name: value}), name, f"{name}: Enter a valid date/time.")
    assert alice_api.get(QUEUE, {"createdAfter": "0001-01-01"}).status_code == 200


def test_an_unknown_parameter_is_refused_rather_than_ignored(alice_api):
    _refused(
        alice_api.get(QUEUE, {"stat": "failed"}),
        "stat",
        "stat is not a filter of this list (createdAfter, createdBefore, mode, processId, state)",
    )


def test_text_that_cannot_be_stored_is_refused_before_the_database(alice_api):
    res = alice_api.get(QUEUE, {"processId": "acme:\x00"})
    assert res.status_code == 400
    assert res.json()["rejection"]["field"] == "processId"  # kernel.middleware, for every route


def test_a_bad_mode_keeps_its_own_refusal(alice_api):
    res = alice_api.get(QUEUE, {"mode": "fast", "state": "failed"})
    assert (res.status_code, res.json()["error"]) == (400, "invalid_mode")


def test_the_format_override_is_still_accepted(alice_api):
    assert alice_api.get(QUEUE, {"format": "json"}).status_code == 200
