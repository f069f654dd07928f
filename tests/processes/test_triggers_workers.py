"""Record triggers with real workers: a write over HTTP that makes a record enter the state is
committed, then its run is delivered by a qcluster worker and runs as the writer — once."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from processes.models import ProcessRun, RunState
from records.models import Record
from tests.processes.engine_support import deploy
from tests.processes.test_triggers_record import DATA, ON_APPROVED
from tests.workers import QCluster, wait_until

pytestmark = [pytest.mark.workers, pytest.mark.django_db(transaction=True)]


def _committed(count: int) -> bool:
    return (
        ProcessRun.objects.filter(process_id="acme:on-approved", state=RunState.COMMITTED).count()
        >= count
    )


def test_each_transition_over_http_is_run_once_by_a_worker_as_the_writer(
    admin_user, alice, tmp_path
):
    deploy(ON_APPROVED, by=admin_user, name="processes/on-approved.ts")
    api = APIClient()
    api.force_authenticate(user=alice)
    with QCluster(workers=2, log_path=tmp_path / "q.log"):
        res = api.post(DATA, {"parent": {"memo": "m", "status": "pendingApproval"}}, format="json")
        pg_row_id = res.json()["pgRowId"]
        for status in ("approved", "approved", "onHold", "approved"):
            res = api.patch(
                DATA, {"pgRowId": pg_row_id, "parent": {"status": status}}, format="json"
            )
            assert res.status_code == 200, res.json()
        wait_until(lambda: _committed(2), timeout=60, message="both triggered runs committed")
        runs = list(ProcessRun.objects.filter(process_id="acme:on-approved").order_by("created_at"))
    # Two transitions into approved (the second approved write kept it there): two runs, each
    # delivered once, as alice, each writing its one record.
    assert [(run.state, run.invoked_by, run.delivery) for run in runs] == [
        (RunState.COMMITTED, alice, 1),
        (RunState.COMMITTED, alice, 1),
    ]
    made = Record.reads.filter(record_type="legacy_customer")
    assert [(r.fields["note"], r.owner) for r in made] == [(pg_row_id, alice), (pg_row_id, alice)]
