"""``make bench``'s shape bench: issue 21's shapes in order, each a few table rows and one RESULT.

Chains first (``shape_chains``), then migrations (``shape_migrations``): the connected one first of
them, so no other shape's outbound writes are queued ahead of its own. The large migration is the
stamped one at ``large_rows``; 0 skips it, and its RESULT line then says so with null figures.
"""

from __future__ import annotations

from collections.abc import Callable

from shape_await import await_bench
from shape_chains import CHAINS, ShapeOutcome, chain_bench
from shape_migrations import Migrations, flatness_row, migration_bench
from shape_result import shape_result, targets_row

MIGRATIONS = (
    "migration_connected",
    "migration_create",
    "migration_create_stamp",
    "migration_create_stamp_50k",
)
SHAPES = (*CHAINS, "await_chain", *MIGRATIONS)

TITLES = {
    "create_chain": "a step of a chain of creates",
    "update_chain": "a step of a chain of updates (records made beforehand)",
    "mixed_chain": "a step of a chain of create / update it / ctx.query it + create",
    "delete_chain": "a step of a chain of deletes (records made beforehand)",
    "single_step": "a run of a single create step",
    "await_chain": "an awaitSource create into purchaseOrder: deliver, drain, resumed delivery",
    "migration_connected": "eachRow create into entity (connected) + stamp, outbound worker on",
    "migration_create": "eachRow create into customer (one slice)",
    "migration_create_stamp": "eachRow create into customer + stamp migrated_at",
    "migration_create_stamp_50k": "the same at the large size",
}


def _one(
    shape: str,
    *,
    rounds: int,
    rows: int,
    large_rows: int,
    dbos: bool,
    migrations: list[Migrations],
) -> ShapeOutcome:
    if shape in CHAINS:
        return chain_bench(shape, rounds=rounds, dbos=dbos)
    if shape == "await_chain":
        return await_bench(rounds=rounds)
    if shape == "migration_create_stamp_50k":
        if not large_rows:
            skipped = shape_result(
                shape,
                "rows_per_s",
                None,
                statements_per_step=None,
                per_step_floor=None,
                grouped_floor=None,
                dbos=None,
            )
            return ShapeOutcome(skipped, [("skipped", "--large-rows 0: every figure null")])
        rows = large_rows
    if not migrations:
        migrations.append(Migrations())
    return migration_bench(shape, rows=rows, migrations=migrations[0])


def shapes_run(
    chosen: list[str],
    *,
    rounds: int,
    rows: int,
    large_rows: int,
    emit: Callable[[dict], None],
    row: Callable[[str, str], None],
    dbos: bool = True,
) -> list[str]:
    """Run the ``chosen`` shapes in ``SHAPES`` order; answers the names of those that failed."""
    failed: list[str] = []
    migrations: list[Migrations] = []
    results: dict[str, dict] = {}
    for shape in (s for s in SHAPES if s in chosen):
        print(f"\nshape {shape} — {TITLES[shape]}", flush=True)
        try:
            out = _one(
                shape,
                rounds=rounds,
                rows=rows,
                large_rows=large_rows,
                dbos=dbos,
                migrations=migrations,
            )
        except Exception as exc:  # noqa: BLE001 — one failing shape must not hide the others
            failed.append(shape)
            print(f"  FAILED — {type(exc).__name__}: {exc}", flush=True)
            continue
        results[shape] = out.result
        for label, value in out.rows:
            row(label, value)
        small = results.get("migration_create_stamp")
        if shape == "migration_create_stamp_50k" and small and out.result["value"]:
            row(*flatness_row(small, out.result))
        targets = targets_row(out.result)
        if targets:
            row("targets", targets)
        emit(out.result)
    return failed
