"""Queue bench: ``GET /v1/processes/queue`` as an administrator at SMALL runs and at LARGE runs.

History is bulk-inserted ``ProcessRun`` rows (the run table is not behind the records door):
mostly committed, some failed and cancelled, a few still queued, created over the last 90 days,
invoked by two users. The read goes through Django's test client (middleware, session
authentication, DRF, the view) in this process; each size is the median of CALLS calls after one
warm-up call. (Named ``queue_reads`` so it never shadows the standard library's ``queue``.)
"""

from __future__ import annotations

import statistics
import time

from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from processes.models import ProcessRun, RunState

STATES = (
    [RunState.COMMITTED] * 194
    + [RunState.FAILED] * 3
    + [RunState.CANCELLED] * 2
    + [RunState.QUEUED]
)
BATCH = 5_000


def runs_top_up(total: int, users: list) -> None:
    """Insert runs until the table holds ``total``, spread over 90 days of created_at."""
    missing = total - ProcessRun.objects.count()
    while missing > 0:
        n = min(missing, BATCH)
        ProcessRun.objects.bulk_create(
            [
                ProcessRun(
                    process_id=f"bench:queue-{i % 25}",
                    state=STATES[i % len(STATES)],
                    module_version=1,
                    invoked_by=users[i % len(users)],
                    input={"i": i},
                )
                for i in range(n)
            ],
            batch_size=BATCH,
        )
        missing -= n
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE process_run SET created_at = now() - random() * interval '90 days'"
            " WHERE process_id LIKE 'bench:queue-%%' AND created_at > now() - interval '1 hour'"
        )
        cursor.execute("ANALYZE process_run")


def read_ms(client: Client, calls: int) -> float:
    client.get("/v1/processes/queue")  # warm-up
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        res = client.get("/v1/processes/queue")
        times.append((time.perf_counter() - started) * 1000)
        if res.status_code != 200:
            raise RuntimeError(
                f"GET /v1/processes/queue answered {res.status_code}: {res.content[:300]!r}"
            )
    return statistics.median(times)


def queue_bench(*, small: int = 1_000, large: int = 100_000, calls: int = 7) -> dict:
    User = get_user_model()
    admin = User.objects.create_superuser(username="bench-admin", password="bench", email="")
    other = User.objects.create_user(username="bench-other", password="bench")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(admin)
    runs_top_up(small, [admin, other])
    ms_small = read_ms(client, calls)
    runs_top_up(large, [admin, other])
    ms_large = read_ms(client, calls)
    return {
        "bench": "queue",
        "ms_1k": round(ms_small, 2),
        "ms_100k": round(ms_large, 2),
        "ratio_100k_over_1k": round(ms_large / ms_small, 2),
    }
