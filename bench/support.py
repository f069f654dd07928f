"""Shared set-up of the benches: Django on a throwaway database, outbound receivers optional."""

from __future__ import annotations

import getpass
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "turbobase.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from records.boundary import record_create  # noqa: E402
from records.signals import outbound_write_queued  # noqa: E402
from records.trail import Actor  # noqa: E402


def bench_db_name() -> str:
    """``BENCH_DB``, else a name of this user and process: two people on one server never collide."""
    user = "".join(ch for ch in getpass.getuser().lower() if ch.isalnum() or ch == "_") or "user"
    return os.environ.get("BENCH_DB") or f"turbobase_bench_{user}_{os.getpid()}"


BENCH_NAMES = {"postgresql": bench_db_name(), "sqlite": str(ROOT / "var" / "bench.sqlite3")}


@contextmanager
def bench_database(*, with_outbound: bool = False) -> Iterator[str]:
    """Create, migrate and finally drop the bench database; yields the vendor name.

    Without ``with_outbound`` the receivers that enqueue outbound drains are disconnected, so a
    bench measures the instance, not django-q2's broker (no worker is needed either way).
    """
    vendor = connection.vendor
    connection.settings_dict.setdefault("TEST", {})["NAME"] = BENCH_NAMES.get(vendor)
    original_name = connection.creation.create_test_db(
        verbosity=0, autoclobber=True, serialize=False
    )
    saved_receivers = list(outbound_write_queued.receivers)
    try:
        if not with_outbound:
            outbound_write_queued.receivers = []
            outbound_write_queued.sender_receivers_cache.clear()
        yield vendor
    finally:
        outbound_write_queued.receivers = saved_receivers
        outbound_write_queued.sender_receivers_cache.clear()
        connection.creation.destroy_test_db(original_name, verbosity=0)


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def ratio_line(
    label: str, engine_s: float, base_s: float, units: int, unit: str, target: float
) -> str:
    ratio = engine_s / base_s if base_s else float("inf")
    verdict = "met" if ratio <= target else "NOT met"
    return (
        f"{label}: engine {units / engine_s:8.1f} {unit}/s, bare boundary {units / base_s:8.1f} {unit}/s, "
        f"engine/bare time ratio {ratio:.2f} (target <= {target:g}x: {verdict})"
    )


def items_make(actor: Actor, batch: str, rows: int) -> list:
    """``rows`` pending ``migration_item`` rows of ``batch``, made through the boundary."""
    return [
        record_create(
            actor=actor,
            record_type="migration_item",
            parent={
                "legacy_id": f"{batch}-{n:06d}",
                "company_name": f"Company {n}",
                "status": "pending",
                "batch": batch,
            },
        ).record
        for n in range(rows)
    ]
