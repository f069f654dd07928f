"""History purge bench (PostgreSQL): a long run history purged down to its newest runs.

The issue's size is 1,000,000 finished runs with 5 ledger rows each, purged to the newest 100,000.
This machine is 2 shared cores, so the default is that shape at a fifth of the size — 200,000 runs
(1,000,000 ledger rows) purged to the newest 20,000 — and says so; ``--runs 1000000 --keep 100000``
runs the issue's size. The history is inserted in SQL (``generate_series``) copying one template
run and its ledger row, spread over 400 days of finish times, across 25 processes.

Measured: the purge's rate (runs/s, and rows/s counting runs and ledger rows), the longest one
batch transaction held its locks (``PurgeResult.longest_batch_s``), and the queue read
(``GET /v1/processes/queue`` as an administrator, through Django's test client) — its p99 with
nothing else going on and its p99 while the purge runs, in another process (not a thread: the
read's Python would otherwise wait on the purge's), target ≤ 1.5×.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/history_purge.py
    (add ``--runs 1000000 --keep 100000`` for the issue's size)
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time

# support sets up Django first: the imports below need it.
from support import bench_database

# isort: split

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection, connections  # noqa: E402
from django.test import Client  # noqa: E402

from guardrails.settings import setting_set  # noqa: E402
from processes.history.purge import history_purge  # noqa: E402
from processes.models import ProcessRun, ProcessRunStep, RunState  # noqa: E402
from processes.run_tally import tally_fold  # noqa: E402

ISSUE_RUNS, ISSUE_KEEP = 1_000_000, 100_000
LEDGER_ROWS = 5
PROCESSES = 25
IDLE_CALLS = 200


def _columns(model: type) -> list[str]:
    return [field.column for field in model._meta.concrete_fields]


def history_insert(runs: int, user_id: int) -> None:
    """``runs`` finished runs (mostly committed, some failed and cancelled) and 5 ledger rows
    each, copied from one template row of each table."""
    template = ProcessRun.objects.create(
        process_id="bench:history-0", module_version=1, state=RunState.COMMITTED
    )
    ProcessRunStep.objects.create(
        run=template, sequence=1, step_id="s1", record_type="note", disposition="confirmed"
    )
    replaced = {
        "run_id": "gen_random_uuid()",
        "process_id": f"'bench:history-' || (g %% {PROCESSES})",
        "state": "(ARRAY['committed','committed','committed','failed','cancelled'])[1 + g %% 5]",
        "pending_reason": "''",
        "invoked_by_id": str(user_id),
        "finished_at": "now() - (g * interval '400 days' / %(runs)s)",
        "created_at": "now() - (g * interval '400 days' / %(runs)s) - interval '1 minute'",
        "input": "jsonb_build_object('i', g)",
    }
    columns = _columns(ProcessRun)
    select = ", ".join(replaced.get(column, f"t.{column}") for column in columns)
    step_columns = [c for c in _columns(ProcessRunStep) if c != "id"]
    step_replaced = {"run_id": "r.run_id", "sequence": "s", "step_id": "'s' || s"}
    step_select = ", ".join(step_replaced.get(c, f"t.{c}") for c in step_columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO process_run ({', '.join(columns)}) SELECT {select} "
            "FROM process_run t, generate_series(1, %(runs)s) g WHERE t.run_id = %(template)s",
            {"runs": runs, "template": template.pk},
        )
        cursor.execute(
            f"INSERT INTO process_run_step ({', '.join(step_columns)}) SELECT {step_select} "
            "FROM process_run r, generate_series(1, %(ledger)s) s, process_run_step t "
            "WHERE t.run_id = %(template)s AND r.run_id <> %(template)s "
            "AND r.process_id LIKE 'bench:history-%%'",  # not the runs earlier benches left
            {"ledger": LEDGER_ROWS, "template": template.pk},
        )
    ProcessRunStep.objects.filter(run=template).delete()
    ProcessRun.objects.filter(pk=template.pk).delete()
    tally_fold()
    with connection.cursor() as cursor:
        for table in ("process_run", "process_run_step", "process_run_tally"):
            cursor.execute(f"VACUUM ANALYZE {table}")


def queue_read_ms(client: Client) -> float:
    started = time.perf_counter()
    res = client.get("/v1/processes/queue")
    assert res.status_code == 200, res.content[:200]
    return (time.perf_counter() - started) * 1000


def p99(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=100)[98] if len(samples) >= 2 else samples[0]


def _purge_in_child(answer: multiprocessing.queues.Queue) -> None:  # type: ignore[name-defined]
    began = time.perf_counter()
    result = history_purge()
    answer.put((result, time.perf_counter() - began))
    connections.close_all()


def bench(runs: int, keep: int) -> dict:
    # Its own name: the queue bench, run before it in the suite, has made ``bench-admin``.
    admin = get_user_model().objects.create_superuser("bench-history-admin", password="x")
    started = time.perf_counter()
    history_insert(runs, admin.pk)
    insert_s = time.perf_counter() - started
    setting_set("history.retain_days", 36_500)  # the count rule alone decides
    setting_set("history.retain_runs", keep)
    client = Client()
    client.force_login(admin)
    queue_read_ms(client)  # warm-up
    idle = [queue_read_ms(client) for _ in range(IDLE_CALLS)]
    connections.close_all()  # the child opens its own
    context = multiprocessing.get_context("fork")
    answer = context.Queue()
    child = context.Process(target=_purge_in_child, args=(answer,))
    child.start()
    during: list[float] = []
    while child.is_alive() and answer.empty():
        during.append(queue_read_ms(client))
    result, purge_s = answer.get()
    child.join()
    left = ProcessRun.objects.count()
    return {
        "runs": runs,
        "keep": keep,
        "insert_s": insert_s,
        "purge_s": purge_s,
        "purged_runs": result.runs,
        "purged_ledger_rows": result.ledger_rows,
        "batches": result.batches,
        "longest_batch_ms": result.longest_batch_s * 1000,
        "batch_median_ms": statistics.median(result.batch_seconds) * 1000,
        "batch_p99_ms": p99(result.batch_seconds) * 1000,
        "left": left,
        "idle_p99_ms": p99(idle),
        "idle_median_ms": statistics.median(idle),
        "during_p99_ms": p99(during),
        "during_median_ms": statistics.median(during) if during else float("nan"),
        "during_calls": len(during),
    }


def report(r: dict) -> str:
    scale = (
        "the issue's size"
        if (r["runs"], r["keep"]) == (ISSUE_RUNS, ISSUE_KEEP)
        else f"SCALED DOWN from the issue's {ISSUE_RUNS:,} runs kept to {ISSUE_KEEP:,}"
    )
    rows = r["purged_runs"] + r["purged_ledger_rows"]
    ratio = r["during_p99_ms"] / r["idle_p99_ms"]
    verdict = "met" if ratio <= 1.5 else "NOT met"
    return "\n".join(
        [
            f"history purge: {r['runs']:,} finished runs x {LEDGER_ROWS} ledger rows, purged to "
            f"the newest {r['keep']:,} ({scale}); inserted in {r['insert_s']:.0f} s",
            f"  purged {r['purged_runs']:,} runs + {r['purged_ledger_rows']:,} ledger rows in "
            f"{r['purge_s']:.1f} s, {r['batches']} batches: {r['purged_runs'] / r['purge_s']:,.0f} "
            f"runs/s, {rows / r['purge_s']:,.0f} rows/s; {r['left']:,} runs left",
            f"  longest lock held (one batch's transaction): {r['longest_batch_ms']:.0f} ms "
            f"(a batch's median {r['batch_median_ms']:.0f} ms, p99 {r['batch_p99_ms']:.0f} ms)",
            f"  queue read p99: idle {r['idle_p99_ms']:.1f} ms (median {r['idle_median_ms']:.1f}),"
            f" during the purge {r['during_p99_ms']:.1f} ms (median "
            f"{r['during_median_ms']:.1f}, {r['during_calls']} reads): {ratio:.2f}x "
            f"(target <= 1.5x: {verdict})",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=ISSUE_RUNS // 5)
    parser.add_argument("--keep", type=int, default=ISSUE_KEEP // 5)
    args = parser.parse_args(argv)
    if connection.vendor != "postgresql":
        print("history purge bench: PostgreSQL only (DATABASE_URL)", file=sys.stderr)
        return 2
    with bench_database():
        print(report(bench(args.runs, args.keep)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
