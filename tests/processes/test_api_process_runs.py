"""``GET /v1/processes/:id/runs``: one process's runs a keyset page at a time — every run exactly
once, newest first, ties on created_at broken by run id, new runs never shifting later pages —
scoped to the caller, and its refusals naming the parameter."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from processes.models import ProcessRun, RunState

pytestmark = pytest.mark.django_db

PATH = "/v1/processes/acme:p/runs"


def _runs(user, *, count: int, process_id: str = "acme:p", first_minute: int = 0) -> list:
    """``count`` runs of ``process_id``, three to a minute: each minute's runs share created_at."""
    runs = ProcessRun.objects.bulk_create(
        [
            ProcessRun(
                process_id=process_id, state=RunState.COMMITTED, module_version=1, invoked_by=user
            )
            for _ in range(count)
        ]
    )
    base = timezone.now() - timedelta(hours=2)
    for k, run in enumerate(runs):
        run.created_at = base + timedelta(minutes=first_minute + k // 3)
    ProcessRun.objects.bulk_update(runs, ["created_at"])
    return runs


def _newest_first(runs: list) -> list[str]:
    return [str(r.pk) for r in sorted(runs, key=lambda r: (r.created_at, r.pk), reverse=True)]


def _walk(api, path: str, **params) -> tuple[list[str], int]:
    """Every page from the first by following next: the run ids in order and the pages read."""
    ids: list[str] = []
    pages = 0
    cursor = None
    while True:
        query = {**params, **({"cursor": cursor} if cursor else {})}
        res = api.get(path, query)
        assert res.status_code == 200, res.content
        body = res.json()
        assert set(body) == {"runs", "next"}
        pages += 1
        ids.extend(run["runId"] for run in body["runs"])
        cursor = body["next"]
        if cursor is None:
            return ids, pages


def test_pages_list_every_run_exactly_once_newest_first(alice, alice_api):
    runs = _runs(alice, count=11)
    _runs(alice, count=4, process_id="acme:other")
    ids, pages = _walk(alice_api, PATH, limit=2)
    assert ids == _newest_first(runs)  # ties on created_at (three a minute) ordered by run id
    assert pages == 6  # 2+2+2+2+2+1: the last page says there is none after it
    ids, pages = _walk(alice_api, PATH, limit=3)  # pages that end exactly on the last run
    assert (ids, pages) == (_newest_first(runs), 4)
    ids, pages = _walk(alice_api, PATH)  # the default page holds them all
    assert (ids, pages) == (_newest_first(runs), 1)


def test_a_run_started_while_paging_does_not_shift_the_later_pages(alice, alice_api):
    runs = _runs(alice, count=6)
    first = alice_api.get(PATH, {"limit": 2}).json()
    newer = _runs(alice, count=1, first_minute=60)  # newer than every run listed so far
    ids, _ = _walk(alice_api, PATH, limit=2, cursor=first["next"])
    listed = [run["runId"] for run in first["runs"]] + ids
    assert listed == _newest_first(runs)  # nothing twice, nothing skipped
    assert str(newer[0].pk) not in listed  # it is on a new first page
    assert alice_api.get(PATH, {"limit": 1}).json()["runs"][0]["runId"] == str(newer[0].pk)


def test_pages_keep_the_filters_and_the_callers_scope(alice, bob, alice_api, admin_api):
    mine = _runs(alice, count=5)
    theirs = _runs(bob, count=4, first_minute=10)
    ProcessRun.objects.filter(pk__in=[mine[0].pk, theirs[0].pk]).update(state=RunState.FAILED)
    ids, _ = _walk(alice_api, PATH, limit=2)
    assert ids == _newest_first(mine)  # a person sees their own runs
    ids, _ = _walk(admin_api, PATH, limit=2)
    assert ids == _newest_first(mine + theirs)  # an administrator every run
    ids, _ = _walk(admin_api, PATH, limit=1, state="failed")
    assert ids == _newest_first([theirs[0], mine[0]])
    ids, _ = _walk(
        admin_api,
        PATH,
        limit=2,
        createdAfter=theirs[0].created_at.isoformat().replace("+00:00", "Z"),
    )
    assert ids == _newest_first(theirs)
    body = alice_api.get("/v1/processes/acme:nothing-yet/runs").json()
    assert body == {"runs": [], "next": None}


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "501"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"cursor": "MjAyNnxub3BlfA"}, "cursor"),  # base64 of text that is no cursor
        ({"processId": "acme:other"}, "processId"),  # the process is the path's
        ({"state": "sleeping"}, "state"),
    ],
)
def test_a_bad_parameter_is_refused_by_name(alice, alice_api, params, field):
    _runs(alice, count=2)
    res = alice_api.get(PATH, params)
    assert res.status_code == 400, res.content
    body = res.json()
    assert (body["error"], body["rejection"]["field"]) == ("invalid_request", field)
