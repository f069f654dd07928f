"""``make bench``: every bench on one throwaway PostgreSQL database, a table, and one RESULT line each.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres BENCH_DB=my_bench .venv/bin/python bench/suite.py \
        [--only step,migration,queue,sync,shape] [--rounds 7] [--rows 1000] [--runs-small 1000] \
        [--runs-large 100000] [--invokes 30] [--shapes create_chain,…] [--shape-rounds 5] \
        [--migration-rows 10000] [--large-rows 50000]

``DATABASE_URL`` is the admin connection; the bench creates ``BENCH_DB`` (default
``turbobase_bench_<user>_<pid>``), migrates it, measures, and drops it. Each bench prints its part
of the table and ends with ``RESULT {json}`` — ratios compare only against references measured in
this same run.
"""

from __future__ import annotations

import argparse
import json
import sys

# support sets up Django first: the imports below need it.
from support import bench_database

# isort: split

from django.db import connection  # noqa: E402

BENCHES = ("step", "migration", "queue", "sync", "shape", "history")


def result_print(result: dict) -> None:
    print("RESULT " + json.dumps(result), flush=True)


def row(label: str, value: str) -> None:
    print(f"  {label:<46} {value}", flush=True)


def run_step(args: argparse.Namespace) -> None:
    from step import step_bench

    r = step_bench(rounds=args.rounds)
    res = r.result()
    print(
        "step — a create step of a 20-step chain, in-process, marginal cost (20-step − 2-step) / 18"
    )
    row("floor (record + ledger INSERT, one transaction)", f"{r.floor_us:10.1f} µs")
    row("bare INSERT (autocommit)", f"{r.bare_insert_us:10.1f} µs")
    row(
        "engine step (steady state)",
        f"{r.engine_step_us:10.1f} µs   {res['engine_over_floor']}× floor",
    )
    row("engine whole 20-step run / 20", f"{r.engine_run_per_step_us:10.1f} µs")
    row("statements per steady-state step", f"{r.statements_per_step:10.2f}")
    dbos = "null" if r.dbos_step_us is None else f"{r.dbos_step_us:10.1f} µs"
    row("DBOS transactional step (marginal)", f"{dbos}   ({r.dbos_note})")
    if res["engine_over_dbos"] is not None:
        row("engine / DBOS", f"{res['engine_over_dbos']:10.2f}×")
    result_print(res)


def run_migration(args: argparse.Namespace) -> None:
    from eachrow import eachrow_bench

    res = eachrow_bench(rows=args.rows)
    print(
        f"migration — a one-create-step eachRow migration of {res['rows']} app-owned rows, in-process"
    )
    row("engine", f"{res['rows_per_s']:10.1f} rows/s")
    row("bare boundary loop (same creates, same keys)", f"{res['bare_rows_per_s']:10.1f} rows/s")
    row("engine time / bare time", f"{res['engine_over_bare']:10.2f}×")
    connected = res.pop("connected", None)
    if connected is not None:
        row(
            "into a connected type, outbound worker on",
            f"{connected['rows_per_s']:10.1f} rows/s   ({connected['sent_by_end']} of "
            f"{res['rows']} writes sent by the migration's end)",
        )
    result_print(res)


def run_queue(args: argparse.Namespace) -> None:
    from queue_reads import READS, queue_bench

    bench = queue_bench(small=args.runs_small, large=args.runs_large, calls=args.calls)
    res = bench.result()
    print(
        f"queue — GET /v1/processes/queue as an administrator, median of {args.calls} calls a size"
        f" ({args.runs_small:,} measured before and after {args.runs_large:,})"
    )
    row(f"at {args.runs_small:,} runs", f"{res['ms_1k']:10.1f} ms")
    row(f"at {args.runs_large:,} runs", f"{res['ms_100k']:10.1f} ms")
    row("ratio", f"{res['ratio_100k_over_1k']:10.2f}×")
    print(
        f"  reads at {args.runs_small:,} → {args.runs_large:,} runs (ms, medians; CLI pages: "
        f"{bench.cli_pages['small']} → {bench.cli_pages['large']})"
    )
    for key, label in READS:
        small, large = bench.ms(key)
        row(label, f"{small:8.1f} → {large:8.1f}   {large / small:5.2f}×")
    result_print(res)


def run_sync(args: argparse.Namespace) -> None:
    from sync_invoke import sync_bench

    detail: dict = {}
    res = sync_bench(invokes=args.invokes, detail=detail)
    print(
        f"sync — {args.invokes} × POST /v1/processes/<id>?mode=sync (3 creates) over HTTP, gunicorn + qcluster"
    )
    row("sync invoke p50", f"{res['invoke_p50_ms']:10.1f} ms")
    row("3 × POST /v1/data in a row, p50", f"{res['plain_p50_ms']:10.1f} ms")
    row("ratio", f"{res['ratio']:10.2f}×")
    row("  of an invoke: the run itself, p50", f"{detail['run_p50_ms']:10.1f} ms")
    result_print(res)


def run_shape(args: argparse.Namespace) -> None:
    from shapes import SHAPES, shapes_run

    chosen = [s.strip() for s in args.shapes.split(",") if s.strip()]
    chosen = list(SHAPES) if chosen == ["all"] else chosen
    unknown = set(chosen) - set(SHAPES)
    if unknown:
        raise ValueError(f"unknown shape(s): {', '.join(sorted(unknown))}")
    failed = shapes_run(
        chosen,
        rounds=args.shape_rounds,
        rows=args.migration_rows,
        large_rows=args.large_rows,
        emit=result_print,
        row=row,
    )
    if failed:
        raise RuntimeError(f"shape(s) failed: {', '.join(failed)}")


def run_history(args: argparse.Namespace) -> None:
    from history_purge import bench, report

    print(report(bench(args.history_runs, args.history_keep)), flush=True)


RUNNERS = {
    "step": run_step,
    "migration": run_migration,
    "queue": run_queue,
    "sync": run_sync,
    "shape": run_shape,
    "history": run_history,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--only", default=",".join(BENCHES), help="comma-separated subset of " + ", ".join(BENCHES)
    )
    parser.add_argument("--rounds", type=int, default=7, help="step bench rounds (medians)")
    parser.add_argument("--rows", type=int, default=1000, help="migration rows")
    parser.add_argument("--runs-small", type=int, default=1_000)
    parser.add_argument("--runs-large", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=7, help="queue reads per size (median)")
    parser.add_argument("--invokes", type=int, default=30, help="sync invokes (and plain triples)")
    parser.add_argument("--shapes", default="all", help="shape subset (default all; see shapes.py)")
    parser.add_argument("--shape-rounds", type=int, default=5, help="chain shape rounds (medians)")
    parser.add_argument("--migration-rows", type=int, default=10_000, help="migration shape rows")
    parser.add_argument(
        "--large-rows", type=int, default=50_000, help="the large migration's rows (0 skips it)"
    )
    parser.add_argument(
        "--history-runs",
        type=int,
        default=200_000,
        help="finished runs (5 ledger rows each) the history purge bench starts from "
        "(the issue's size is 1,000,000: one fifth by default on a 2-core machine)",
    )
    parser.add_argument("--history-keep", type=int, default=20_000, help="runs it purges down to")
    args = parser.parse_args(argv)
    chosen = [b.strip() for b in args.only.split(",") if b.strip()]
    unknown = set(chosen) - set(BENCHES)
    if unknown:
        parser.error(f"unknown bench(es): {', '.join(sorted(unknown))}")
    if connection.vendor != "postgresql":
        parser.error("make bench needs PostgreSQL: set DATABASE_URL=postgres://…")
    from machine import LoadSampler, machine_line

    with bench_database() as vendor, LoadSampler() as load:
        print(
            f"Turbobase benches — {vendor} database {connection.settings_dict['NAME']}", flush=True
        )
        print(f"machine: {machine_line()}", flush=True)
        failed = []
        for name in chosen:
            print(flush=True)
            try:
                RUNNERS[name](args)
            except Exception as exc:  # noqa: BLE001 — one failing bench must not hide the others' lines
                failed.append(name)
                print(f"{name}: FAILED — {type(exc).__name__}: {exc}", flush=True)
    print(f"\n{load.summary()}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
