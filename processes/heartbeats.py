"""Which worker clusters are alive: each lane's cluster writes its row every few seconds.

``/v1/health/ready`` needs "at least one worker cluster seen in the last 60 s". django-q2 keeps its
own cluster stats (``Stat``) in the broker's cache — Django's per-process memory cache with the ORM
broker, so another process never sees them — hence a row of our own: the lane's cluster process
(``manage.py qcluster``) beats while its sentinel lives (``heartbeat_beat``), one UPDATE (an
INSERT the first time) every ``BEAT_EVERY_S``. ``/metrics`` shows each cluster's age too.
"""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime, timedelta

from django.db import close_old_connections, connection, models
from django.utils import timezone

BEAT_EVERY_S = 10.0
SEEN_WITHIN_S = 60.0


class ClusterHeartbeat(models.Model):
    """One lane cluster on one host: when it was last seen alive."""

    cluster = models.CharField(max_length=64)
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    seen_at = models.DateTimeField()

    class Meta:
        db_table = "process_cluster_heartbeat"
        constraints = [
            models.UniqueConstraint(fields=["cluster", "host"], name="cluster_heartbeat_unique")
        ]

    def __str__(self) -> str:
        return f"{self.cluster}@{self.host} ({self.seen_at:%Y-%m-%d %H:%M:%S})"


def heartbeat_beat(cluster: str) -> None:
    """This host's ``cluster`` is alive now."""
    ClusterHeartbeat.objects.update_or_create(
        cluster=cluster,
        host=socket.gethostname()[:255],
        defaults={"pid": os.getpid(), "seen_at": timezone.now()},
    )


class Beater:
    """Beats for ``cluster`` at most every ``BEAT_EVERY_S`` when called (a watch loop's tick).

    ``hold``: keep the connection between beats (a process that holds one anyway, for its
    redelivery watch); otherwise it is closed after each beat, so a lane process that needs no
    connection otherwise adds none to the instance's budget (README, Running in production)."""

    def __init__(self, cluster: str, *, hold: bool = False) -> None:
        self.cluster = cluster
        self.hold = hold
        self.next_at = 0.0

    def tick(self) -> None:
        if time.monotonic() < self.next_at:
            return
        self.next_at = time.monotonic() + BEAT_EVERY_S
        try:
            heartbeat_beat(self.cluster)
        except Exception:  # the database blinked: the next tick tries again, ready shows it
            close_old_connections()
        if not self.hold:
            connection.close()


def clusters_seen(within_s: float = SEEN_WITHIN_S) -> list[ClusterHeartbeat]:
    """The clusters seen alive in the last ``within_s`` seconds (a handful of rows)."""
    since: datetime = timezone.now() - timedelta(seconds=within_s)
    return list(ClusterHeartbeat.objects.filter(seen_at__gte=since).order_by("cluster", "host"))
