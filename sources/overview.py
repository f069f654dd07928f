"""``GET /v1/sources``: each connected source's limits and what is waiting to reach it right now."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Min
from django.utils import timezone

from records.catalog import catalog_load
from records.models import RecordWriteState, WriteStatus
from sources.models import SourceInFlight, SourcePace
from sources.pacing import pace_limits


def sources_overview() -> list[dict[str, Any]]:
    """One row per source the catalog names (and any other one with pacing state), by name."""
    now = timezone.now()
    backlog = {
        row["source_system"]: row
        for row in RecordWriteState.reads.filter(status=WriteStatus.PENDING)
        .values("source_system")
        .annotate(n=Count("id"), oldest=Min("created_at"))
    }
    in_flight = dict(
        SourceInFlight.objects.filter(lease_until__gte=now)
        .values("source")
        .annotate(n=Count("id"))
        .values_list("source", "n")
    )
    paced = dict(SourcePace.objects.values_list("source", "paced_until"))
    names = set(catalog_load().sources) | set(paced) | set(backlog)
    rows = []
    for name in sorted(names):
        limits = pace_limits(name)
        waiting = backlog.get(name)
        until = paced.get(name)
        backing_off = until is not None and until > now
        rows.append(
            {
                "name": name,
                "maxPerSecond": limits.max_per_second,
                "maxInFlight": limits.max_in_flight,
                "inFlight": in_flight.get(name, 0),
                "backlog": waiting["n"] if waiting else 0,
                "oldestBacklogAgeS": (
                    round((now - waiting["oldest"]).total_seconds(), 3) if waiting else None
                ),
                "backingOff": backing_off,
                "pacedUntil": until.isoformat() if backing_off and until else None,
            }
        )
    return rows
