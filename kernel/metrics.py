"""The instance's Prometheus metrics that count events as they happen (``GET /metrics`` serves them).

Every process — each gunicorn worker, each django-q2 worker, the launcher — counts into its own
files under ``PROMETHEUS_MULTIPROC_DIR`` (``settings``: ``TURBOBASE_VAR/prometheus``, emptied by
``tb_run`` at start); a scrape adds them up (``prometheus_client.multiprocess``), so one scrape sees
every process. The gauges that need the database (queue depth, held deletes, outbound backlog) are
not here: the scrape reads them from indexed rows when asked (``turbobase.metrics_collector``).

Names start with ``turbobase_``; a counter's exposition adds ``_total``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from prometheus_client import Counter, Histogram

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

# Seconds; a step or a sandbox call spans a few milliseconds to a slice's minutes.
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900)

RUNS_STARTED = Counter(
    "turbobase_runs_started", "Runs started (invoked, triggered or scheduled).", ["process"]
)
RUNS_FINISHED = Counter(
    "turbobase_runs_finished",
    "Runs that ended, by their final state (committed, failed, rolled_back, cancelled, refused).",
    ["process", "outcome"],
)
STEP_SECONDS = Histogram(
    "turbobase_step_duration_seconds",
    "How long one step took, from its start to its ledger row, by step kind.",
    ["kind"],
    buckets=_BUCKETS,
)
LEASE_TAKEOVERS = Counter(
    "turbobase_lease_takeovers",
    "Running runs whose delivery's lease ran out (its worker died) and were sent again.",
    ["lane"],
)
GUARDRAIL_DECISIONS = Counter(
    "turbobase_guardrail_decisions",
    "Writes the boundary held or refused, by decision and by the rule (code) that decided.",
    ["decision", "rule"],
)
SANDBOX_CALL_SECONDS = Histogram(
    "turbobase_sandbox_call_duration_seconds",
    "How long one call into the extension sandbox took, by outcome (ok or error).",
    ["outcome"],
    buckets=_BUCKETS,
)
HTTP_REQUESTS = Counter(
    "turbobase_http_requests",
    "HTTP requests answered, by route pattern, method and status code.",
    ["route", "method", "status"],
)


def multiproc_dir() -> Path | None:
    """Where the processes' metric files are (None: this process counts alone)."""
    value = os.environ.get(MULTIPROC_ENV, "")
    return Path(value) if value else None


def multiproc_dir_clean() -> None:
    """Empty the metric files: the processes of an earlier start are gone, and so are their counts
    (``tb_run`` at start, before any child counts anything)."""
    folder = multiproc_dir()
    if folder is None:
        return
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
