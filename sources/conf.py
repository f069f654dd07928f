"""Tunables of the outbound worker, read lazily from Django settings (``kernel.deployment``).

Operators change ``sources.max_attempts`` at run time (an instance setting in guardrails); the
timings below are deployment choices, and tests shrink them with ``settings`` overrides.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernel import deployment


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
        retry_base_seconds=deployment.sources_retry_base_seconds(),
        retry_cap_seconds=deployment.sources_retry_cap_seconds(),
        inline_retry_seconds=deployment.sources_inline_retry_seconds(),
        lane_lease_seconds=deployment.sources_lane_lease_seconds(),
        drain_max_writes=deployment.sources_drain_max_writes(),
        drain_max_seconds=deployment.sources_drain_max_seconds(),
    )
