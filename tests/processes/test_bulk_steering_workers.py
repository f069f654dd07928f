"""A bulk action performed by a real worker: submitted over HTTP, steered by the cluster."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from processes.bulk.models import BulkAction
from processes.models import ProcessRun
from tests.processes.engine_support import deploy, invoke
from tests.processes.test_run_search import ORDERS
from tests.workers import QCluster, wait_until

pytestmark = [pytest.mark.workers, pytest.mark.django_db(transaction=True)]


def test_a_worker_cancels_every_previewed_run(admin_user, alice, tmp_path):
    deploy(ORDERS, by=admin_user, name="processes/orders.ts")
    api = APIClient()
    api.force_authenticate(user=admin_user)
    # Queued runs whose lane has no worker of its own here: only the bulk task touches them.
    runs = [invoke("acme:orders", {"customer": "C-1"}, alice, send=False) for _ in range(60)]
    body = {"action": "cancel", "filter": {"input.customer": "C-1"}}
    preview = api.post("/v1/processes/runs/bulk", {**body, "preview": True}, format="json")
    bulk_id = preview.json()["bulkId"]
    with QCluster(workers=1, log_path=tmp_path / "q.log"):
        submitted = api.post(
            "/v1/processes/runs/bulk", {**body, "preview": False, "bulkId": bulk_id}, format="json"
        )
        assert submitted.status_code == 202, submitted.content
        wait_until(
            lambda: BulkAction.objects.get(pk=bulk_id).status == "done",
            timeout=120,
            message="the bulk action done",
        )
    shown = api.get(f"/v1/processes/runs/bulk/{bulk_id}").json()
    assert (shown["done"], shown["skipped"], shown["failed"]) == (60, 0, 0)
    assert set(
        ProcessRun.objects.filter(pk__in=[r.pk for r in runs]).values_list("state", flat=True)
    ) == {"cancelled"}
