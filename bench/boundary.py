"""Boundary bench: records/s of write-boundary creates against raw ORM creates, in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/turbobase .venv/bin/python bench/boundary.py [--n 2000]

It creates a throwaway database (``BENCH_DB``, default ``turbobase_bench_<user>_<pid>``, on
PostgreSQL, ``var/bench.sqlite3`` on SQLite), migrates it, measures, and drops it. Series are
interleaved in rounds so drift (autovacuum, cache warm-up) hits them all alike. The target is
that a boundary create keeps at least a third of the raw rate; ``--check`` exits 1 when a series falls below it.

Connected creates (``customer``) queue an outbound write and, after commit, send
``outbound_write_queued`` — the sources room answers that by enqueuing a django-q2 task. No worker
is needed either way: by default the bench disconnects those receivers to measure the boundary
alone; ``--with-outbound`` keeps them, so the enqueue cost is counted (the tasks stay queued).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "turbobase.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from records.boundary import record_create  # noqa: E402
from records.door import door_open  # noqa: E402
from records.models import Record, SyncState  # noqa: E402
from records.signals import outbound_write_queued  # noqa: E402
from records.trail import Actor  # noqa: E402

TARGET_RATIO = 1 / 3
# The database name: BENCH_DB, else one of this user and process (bench/support.py).
from support import BENCH_NAMES  # noqa: E402


@dataclass
class Series:
    label: str
    write: Callable[[int], object]
    seconds: float = 0.0
    count: int = 0
    queries: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds else 0.0


def series_build(actor: Actor, *, run_id: str) -> list[Series]:
    user = actor.user

    def raw(i: int) -> object:
        with door_open():
            return Record.objects.create(
                record_type="legacy_customer",
                fields={"company_name": f"Raw {i}", "legacy_id": f"R-{i}"},
                owner=user,
                sync_state=SyncState.LOCAL,
            )

    def app_owned(i: int) -> object:
        return record_create(
            actor=actor,
            record_type="legacy_customer",
            parent={"company_name": f"App {i}", "legacy_id": f"A-{i}"},
        )

    def app_owned_keyed(i: int) -> object:
        return record_create(
            actor=actor,
            record_type="legacy_customer",
            parent={"company_name": f"Key {i}", "legacy_id": f"K-{i}"},
            idempotency_key=f"bench:{run_id}:{i}",
        )

    def connected(i: int) -> object:
        return record_create(
            actor=actor, record_type="customer", parent={"company_name": f"Customer {i}"}
        )

    return [
        Series("raw ORM create (Record.objects.create in the door)", raw),
        Series("boundary create, legacy_customer (app-owned)", app_owned),
        Series("boundary create, legacy_customer + idempotency key", app_owned_keyed),
        Series("boundary create, customer (connected: queues outbound)", connected),
    ]


def series_measure(series: list[Series], *, n: int, rounds: int, warmup: int) -> None:
    offset = 10_000_000  # keeps warm-up and measured payloads apart
    for s in series:
        for i in range(warmup):
            s.write(offset + i)
    per_round = max(1, n // rounds)
    for r in range(rounds):
        for s in series:
            start_index = r * per_round
            started = time.perf_counter()
            for i in range(start_index, start_index + per_round):
                s.write(i)
            s.seconds += time.perf_counter() - started
            s.count += per_round
    for s in series:
        with CaptureQueriesContext(connection) as captured:
            s.write(offset * 2)
        s.queries = [q["sql"] for q in captured.captured_queries]


_TABLE = re.compile(r'(?:FROM|INTO|UPDATE|JOIN)\s+"?([A-Za-z0-9_]+)"?', re.IGNORECASE)


def query_kind(sql: str) -> str:
    """``INSERT record``, ``SELECT auth_user_groups``, ``SAVEPOINT`` … for the breakdown."""
    words = sql.strip().split()
    verb = words[0].upper() if words else "?"
    if verb in ("SAVEPOINT", "RELEASE", "ROLLBACK"):
        return "SAVEPOINT/RELEASE" if verb != "ROLLBACK" else "ROLLBACK TO SAVEPOINT"
    table = _TABLE.search(sql)
    return f"{verb} {table.group(1) if table else ''}".strip()


def report(series: list[Series], *, vendor: str, n: int, rounds: int, with_outbound: bool) -> bool:
    raw = series[0]
    print(
        f"Turbobase boundary bench — {vendor}, {raw.count} creates per series in {rounds} interleaved rounds; "
        f"outbound receivers {'kept' if with_outbound else 'disconnected'}"
    )
    print(f"{'series':58} {'records/s':>10} {'vs raw':>8}")
    is_on_target = True
    for s in series:
        ratio = s.rate / raw.rate if raw.rate else 0.0
        mark = "" if s is raw else f"{ratio:8.2f}"
        if s is not raw and ratio < TARGET_RATIO:
            is_on_target = False
            mark += "  below 1/3"
        print(f"{s.label:58} {s.rate:10.0f} {mark}")
    print(
        f"target: every boundary series keeps >= 1/3 of the raw rate: {'met' if is_on_target else 'NOT met'}"
    )
    print("\nstatements per create (one create, captured by CaptureQueriesContext):")
    for s in series:
        kinds = Counter(query_kind(q) for q in s.queries)
        detail = ", ".join(f"{k} x{c}" if c > 1 else k for k, c in kinds.items())
        print(f"  {len(s.queries):2d}  {s.label}: {detail}")
    return is_on_target


def profile_print(s: Series, *, n: int = 500) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for i in range(n):
        s.write(20_000_000 + i)
    profiler.disable()
    print(
        f"\n-- cProfile of {n} x {s.label} (cumulative; profiler overhead inflates absolute times)"
    )
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(
        r"records|guardrails|turbobase", 25
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="creates per series (default 2000)")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds (default 4)")
    parser.add_argument(
        "--warmup", type=int, default=50, help="unmeasured creates per series first"
    )
    parser.add_argument(
        "--with-outbound",
        action="store_true",
        help="keep outbound_write_queued receivers (enqueues tasks; no worker needed)",
    )
    parser.add_argument("--sql", action="store_true", help="print each captured statement")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile 500 app-owned boundary creates and print the top functions",
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if a series is below the target"
    )
    args = parser.parse_args(argv)

    vendor = connection.vendor
    connection.settings_dict.setdefault("TEST", {})["NAME"] = BENCH_NAMES.get(vendor)
    original_name = connection.creation.create_test_db(
        verbosity=0, autoclobber=True, serialize=False
    )
    saved_receivers = list(outbound_write_queued.receivers)
    try:
        if not args.with_outbound:
            outbound_write_queued.receivers = []
            outbound_write_queued.sender_receivers_cache.clear()
        user = get_user_model().objects.create_user(username="bench", password="bench")
        series = series_build(Actor(user=user), run_id=str(os.getpid()))
        series_measure(series, n=args.n, rounds=args.rounds, warmup=args.warmup)
        is_on_target = report(
            series, vendor=vendor, n=args.n, rounds=args.rounds, with_outbound=args.with_outbound
        )
        if args.profile:
            profile_print(series[1])
        if args.sql:
            for s in series:
                print(f"\n-- {s.label}")
                for q in s.queries:
                    print(f"   {q[:300]}")
    finally:
        outbound_write_queued.receivers = saved_receivers
        outbound_write_queued.sender_receivers_cache.clear()
        connection.creation.destroy_test_db(original_name, verbosity=0)
    return 0 if is_on_target or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
