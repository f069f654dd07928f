"""The two lanes: separate django-q2 clusters (queues) with separate worker pools.

``sync`` serves short interactive runs (``?mode=sync``); ``async`` serves everything else,
migration slices included, so a long migration cannot starve the interactive lane.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from django.db import transaction
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.brokers.orm import ORM
from django_q.brokers.redis_broker import Redis
from django_q.conf import Conf
from django_q.humanhash import uuid as task_uuid
from django_q.models import OrmQ
from django_q.signals import pre_enqueue
from django_q.signing import SignedPackage
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


def _delivery_package(*, run_id: str | UUID, delivery: int, cluster: str) -> str:
    """The signed task ``async_task`` would build for this delivery (same keys, same signal)."""
    tag = task_uuid()
    task = {
        "id": tag[1],
        "name": f"run {run_id} #{delivery}",
        "func": DELIVER_TASK,
        "args": (str(run_id), delivery),
        "cluster": cluster,
    }
    if Conf.CACHED:
        task["cached"] = Conf.CACHED
    if Conf.ACK_FAILURES:
        task["ack_failure"] = Conf.ACK_FAILURES
    task["kwargs"] = {}
    task["started"] = timezone.now()
    pre_enqueue.send(sender="django_q", task=task)
    return SignedPackage.dumps(task)


def lane_send_many(deliveries: Sequence[tuple[str | UUID, int]], *, mode: str) -> None:
    """Hand many (run id, delivery) to the lane's broker at once, after the current transaction
    commits: one bulk insert of the ORM broker's rows, one RPUSH of them all on Redis (the wake-ups
    of a thousand sleepers due in the same second). Another broker, or sync mode: one at a time."""
    if not deliveries:
        return
    cluster = LANE_CLUSTERS[mode]

    def send() -> None:
        broker = get_broker(list_key=cluster)
        if Conf.SYNC or not isinstance(broker, ORM | Redis):
            for run_id, delivery in deliveries:
                async_task(
                    DELIVER_TASK,
                    str(run_id),
                    delivery,
                    cluster=cluster,
                    task_name=f"run {run_id} #{delivery}",
                )
            return
        packs = [
            _delivery_package(run_id=run_id, delivery=delivery, cluster=cluster)
            for run_id, delivery in deliveries
        ]
        if isinstance(broker, Redis):
            broker.connection.rpush(broker.list_key, *packs)
            return
        now = timezone.now()  # the ORM broker's enqueue: lock = now marks a row free to take
        OrmQ.objects.using(Conf.ORM).bulk_create(
            [
                OrmQ(key=broker.list_key or Conf.CLUSTER_NAME, payload=pack, lock=now)
                for pack in packs
            ],
            batch_size=500,
        )

    transaction.on_commit(send)
