"""The two lanes: separate django-q2 clusters (queues) with separate worker pools.

``sync`` serves short interactive runs (``?mode=sync``); ``async`` serves everything else,
migration slices included, so a long migration cannot starve the interactive lane.
"""

from __future__ import annotations

from uuid import UUID

from django.db import transaction
from django.utils import timezone
from django_q.tasks import async_task

from processes.models import ProcessRun

LANE_CLUSTERS = {"sync": "tb_sync", "async": "tb_async"}
CLUSTER_LANES = {cluster: mode for mode, cluster in LANE_CLUSTERS.items()}
DELIVER_TASK = "processes.tasks.run_deliver"


def lane_send(*, run_id: str | UUID, delivery: int, mode: str) -> None:
    """Hand delivery ``delivery`` of the run to its lane's broker, after the current transaction commits."""
    cluster = LANE_CLUSTERS[mode]

    def send() -> None:
        async_task(
            DELIVER_TASK,
            str(run_id),
            delivery,
            cluster=cluster,
            task_name=f"run {run_id} #{delivery}",
        )

    transaction.on_commit(send)


def lane_enqueue(*, run_id: str | UUID, delivery: int, mode: str) -> None:
    """Queue one delivery of the run on its lane, noting when (a lost one is sent again)."""
    ProcessRun.objects.filter(pk=run_id).update(enqueued_at=timezone.now())
    lane_send(run_id=run_id, delivery=delivery, mode=mode)
