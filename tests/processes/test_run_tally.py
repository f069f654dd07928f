"""The run tally: the queue's counts stay exact through every way a run is written — created one by
one or in bulk, moved by the ORM or a raw UPDATE, its invoker gone, the run deleted — before
and after a fold, for an administrator and for a person; and on PostgreSQL they never read the
run table."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from processes.models import ProcessRun, ProcessRunTally, ProcessRunTallyDelta, RunState
from processes.run_tally import runs_counted, tally_counts, tally_fold, tally_is_kept
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def _run(process_id: str, user, state: str = RunState.QUEUED, mode: str = "async") -> ProcessRun:
    return ProcessRun.objects.create(
        process_id=process_id, state=state, mode=mode, module_version=1, invoked_by=user
    )


def _queue_counts(api, **params) -> dict[str, int]:
    res = api.get("/v1/processes/queue", params)
    assert res.status_code == 200, res.content
    return {state: n for state, n in res.json()["counts"].items() if n}


def _truth(**narrowing) -> dict[str, int]:
    return runs_counted(ProcessRun.objects.filter(**narrowing))


def test_counts_stay_exact_through_every_write_and_every_fold(alice, bob, alice_api, admin_api):
    ours = [_run("acme:a", alice) for _ in range(3)] + [_run("acme:b", bob, mode="sync")]
    ProcessRun.objects.bulk_create(
        [
            ProcessRun(process_id="acme:b", state=s, module_version=1, invoked_by=alice)
            for s in [RunState.COMMITTED] * 5 + [RunState.FAILED] * 2
        ]
    )
    ours[0].state = RunState.RUNNING
    ours[0].save()  # a save of every column: counted once, as a move
    ours[0].save()  # saved again unchanged: no move
    ProcessRun.objects.filter(pk=ours[1].pk).update(state=RunState.CANCELLED)
    with connection.cursor() as cursor:  # a write no Python code of ours makes
        cursor.execute(
            "UPDATE process_run SET state = %s WHERE run_id = %s",
            [RunState.COMMITTED, ours[2].pk.hex if connection.vendor == "sqlite" else ours[2].pk],
        )
    ProcessRun.objects.filter(process_id="acme:b", state=RunState.FAILED).first().delete()
    carols = _run("acme:a", make_user("carol"), RunState.COMMITTED)
    # What deleting her does to her run (on_delete SET NULL): it stays, invoked by nobody now.
    ProcessRun.objects.filter(pk=carols.pk).update(invoked_by=None)
    for _ in range(2):  # before the fold, and after it
        assert _queue_counts(admin_api) == _truth()
        assert _queue_counts(alice_api) == _truth(invoked_by=alice)
        assert _queue_counts(admin_api, processId="acme:b") == _truth(process_id="acme:b")
        assert _queue_counts(admin_api, mode="sync") == _truth(mode="sync")
        assert tally_counts(invoked_by_id=0) == {"committed": 1}  # carol's, invoked by nobody
        tally_fold()
    assert _truth() == {"queued": 1, "running": 1, "cancelled": 1, "committed": 7, "failed": 1}
    if tally_is_kept():
        assert ProcessRunTallyDelta.objects.count() == 0  # folded away
        assert (
            sum(ProcessRunTally.objects.values_list("n", flat=True)) == ProcessRun.objects.count()
        )


def test_a_time_window_counts_its_own_runs(alice, admin_api):
    early = _run("acme:a", alice, RunState.COMMITTED)
    late = _run("acme:a", alice, RunState.FAILED)
    bound = late.created_at.isoformat().replace("+00:00", "Z")
    assert _queue_counts(admin_api, createdAfter=bound) == {"failed": 1}
    assert _queue_counts(admin_api, createdBefore=bound) == {"committed": 1}
    assert early.created_at < late.created_at


def test_the_queue_counts_never_read_the_run_table(alice, admin_api):
    if not tally_is_kept():
        pytest.skip("the embedded SQLite counts its runs directly")
    for state in (RunState.QUEUED, RunState.COMMITTED, RunState.FAILED):
        _run("acme:a", alice, state)
    with CaptureQueriesContext(connection) as queries:
        counts = _queue_counts(admin_api)
    assert counts == {"queued": 1, "committed": 1, "failed": 1}
    reading_runs = [q["sql"] for q in queries if 'FROM "process_run" ' in q["sql"] + " "]
    # The newest runs are listed (one LIMIT over the created_at index); nothing counts them.
    assert len(reading_runs) == 1 and "LIMIT" in reading_runs[0], reading_runs
    assert all("COUNT(" not in q["sql"].upper() for q in queries)
