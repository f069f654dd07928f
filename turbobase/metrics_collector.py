"""The gauges ``/metrics`` reads from the database when scraped: queue, held deletes, outbound
backlog, worker clusters.

Each is one statement on an index that holds only the rows it counts — the runs not ended
(``process_run (state, pending_reason)``), the pending held deletes (the partial unique index on
them), each record type's pending writes (``record_write_state (record_type, status, id)``), one
row per worker cluster — so a scrape costs the same at 100,000 runs as at 1,000: the finished
runs and the confirmed writes are never read (``tests/turbobase/test_metrics_scale.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from django.db.models import Count, Min
from django.db.models.functions import Coalesce
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from guardrails.models import HeldDelete, HeldStatus
from processes.heartbeats import ClusterHeartbeat
from processes.models import PendingReason, ProcessRun, RunState
from records.catalog import catalog_load
from records.models import RecordWriteState, WriteStatus

NOT_ENDED = (RunState.QUEUED, RunState.RUNNING)


def _age(now: datetime, then: datetime | None) -> float:
    return max((now - then).total_seconds(), 0.0) if then is not None else 0.0


class DatabaseCollector(Collector):
    """Registered on each scrape's registry (``turbobase.metrics_view``)."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = timezone.now()
        yield from self._queue(now)
        yield from self._held_deletes(now)
        yield from self._outbound(now)
        yield self._clusters(now)

    def _queue(self, now: datetime) -> Iterator[GaugeMetricFamily]:
        depth = GaugeMetricFamily(
            "turbobase_queue_depth",
            "Runs not ended, by why they are not moving (pendingReason).",
            labels=["pending_reason"],
        )
        counted = dict(
            ProcessRun.objects.filter(state__in=NOT_ENDED)
            .order_by()
            .values_list("pending_reason")
            .annotate(n=Count("pk"))
        )
        for reason in PendingReason.values:
            if reason:
                depth.add_metric([reason], counted.get(reason, 0))
        yield depth
        oldest = ProcessRun.objects.filter(state=RunState.QUEUED).aggregate(
            at=Min(Coalesce("enqueued_at", "created_at"))
        )["at"]
        yield GaugeMetricFamily(
            "turbobase_queue_oldest_age_seconds",
            "How long the oldest queued run has waited for a worker (0: none is queued).",
            value=_age(now, oldest),
        )

    def _held_deletes(self, now: datetime) -> Iterator[GaugeMetricFamily]:
        held = HeldDelete.objects.filter(status=HeldStatus.PENDING).aggregate(
            n=Count("pk"), oldest=Min("requested_at")
        )
        yield GaugeMetricFamily(
            "turbobase_held_deletes_pending",
            "Held deletes waiting for an operator's decision.",
            value=held["n"],
        )
        yield GaugeMetricFamily(
            "turbobase_held_deletes_oldest_age_seconds",
            "How long the oldest held delete has waited (0: none waits).",
            value=_age(now, held["oldest"]),
        )

    def _outbound(self, now: datetime) -> Iterator[GaugeMetricFamily]:
        backlog = GaugeMetricFamily(
            "turbobase_outbound_backlog",
            "Writes waiting to be sent to their source, per connected source.",
            labels=["source"],
        )
        oldest_age = GaugeMetricFamily(
            "turbobase_outbound_oldest_age_seconds",
            "How long the oldest write waiting for its source has waited, per connected source.",
            labels=["source"],
        )
        types = [rt.name for rt in catalog_load().types.values() if rt.is_connected]
        sources = sorted({rt.source for rt in catalog_load().types.values() if rt.source})
        pending = {
            source: (n, oldest)
            for source, n, oldest in RecordWriteState.objects.filter(
                record_type__in=types, status=WriteStatus.PENDING
            )
            .order_by()
            .values_list("source_system")
            .annotate(n=Count("pk"), oldest=Min("created_at"))
        }
        for source in sorted(set(sources) | set(pending)):
            n, oldest = pending.get(source, (0, None))
            backlog.add_metric([source], n)
            oldest_age.add_metric([source], _age(now, oldest))
        yield backlog
        yield oldest_age

    def _clusters(self, now: datetime) -> GaugeMetricFamily:
        seen = GaugeMetricFamily(
            "turbobase_worker_cluster_last_seen_seconds",
            "Seconds since each worker cluster (lane, host) last said it was alive.",
            labels=["cluster", "host"],
        )
        for cluster, host, seen_at in ClusterHeartbeat.objects.values_list(
            "cluster", "host", "seen_at"
        ):
            seen.add_metric([cluster, host], _age(now, seen_at))
        return seen
