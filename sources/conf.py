"""Tunables of the outbound worker, read lazily from Django settings (never at import time).

Operators change ``sources.max_attempts`` at run time (an instance setting in guardrails); the
timings below are deployment choices, and tests shrink them with ``settings`` overrides.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings


@dataclass(frozen=True)
class OutboundConf:
    retry_base_seconds: float  # first backoff; doubles per failed attempt
    retry_cap_seconds: float  # longest backoff, and the interval once max_attempts is passed
    inline_retry_seconds: float  # a retry due sooner than this is waited for in the worker
    lane_lease_seconds: float  # how long a crashed worker can block its record type
    drain_max_writes: int  # a drain yields its worker after this many sends …
    drain_max_seconds: float  # … or this long, so one busy type cannot starve the others


def outbound_conf() -> OutboundConf:
    return OutboundConf(
        retry_base_seconds=float(getattr(settings, "SOURCES_RETRY_BASE_SECONDS", 1.0)),
        retry_cap_seconds=float(getattr(settings, "SOURCES_RETRY_CAP_SECONDS", 300.0)),
        inline_retry_seconds=float(getattr(settings, "SOURCES_INLINE_RETRY_SECONDS", 2.0)),
        lane_lease_seconds=float(getattr(settings, "SOURCES_LANE_LEASE_SECONDS", 120.0)),
        drain_max_writes=int(getattr(settings, "SOURCES_DRAIN_MAX_WRITES", 100)),
        drain_max_seconds=float(getattr(settings, "SOURCES_DRAIN_MAX_SECONDS", 30.0)),
    )
