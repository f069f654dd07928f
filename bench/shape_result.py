"""What every shape bench shares: its RESULT line, the statements it counts, the groups it reads.

A shape's line has exactly the keys issue 21 names. ``over_*`` are time ratios, engine ÷
reference (below 1 the engine is faster): for ``us_per_step`` the engine's µs ÷ the reference's,
for ``rows_per_s`` the reference's rows/s ÷ the engine's (the same time ratio, from rates).
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import connection

from processes.models import ProcessRunStep

SHAPE_KEYS = (
    "bench",
    "shape",
    "unit",
    "value",
    "statements_per_step",
    "per_step_floor",
    "grouped_floor",
    "over_per_step_floor",
    "over_grouped_floor",
    "dbos",
    "over_dbos",
)
UNITS = ("us_per_step", "rows_per_s")


def _over(unit: str, value: float | None, reference: float | None) -> float | None:
    if value is None or reference is None or not value or not reference:
        return None
    return round(value / reference if unit == "us_per_step" else reference / value, 2)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def shape_result(
    shape: str,
    unit: str,
    value: float | None,
    *,
    statements_per_step: float | None,
    per_step_floor: float | None,
    grouped_floor: float | None,
    dbos: float | None,
) -> dict:
    """The RESULT line of one shape. ``None`` values (a skipped shape, no DBOS) stay null."""
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, not {unit!r}")
    return {
        "bench": "shape",
        "shape": shape,
        "unit": unit,
        "value": _round(value),
        "statements_per_step": None
        if statements_per_step is None
        else round(statements_per_step, 2),
        "per_step_floor": _round(per_step_floor),
        "grouped_floor": _round(grouped_floor),
        "over_per_step_floor": _over(unit, value, per_step_floor),
        "over_grouped_floor": _over(unit, value, grouped_floor),
        "dbos": _round(dbos),
        "over_dbos": _over(unit, value, dbos),
    }


@dataclass
class Counted:
    """The statements sent on Django's connection inside ``statements_counted``."""

    count: int = 0


@contextmanager
def statements_counted() -> Iterator[Counted]:
    """Count every statement the engine sends on Django's connection, BEGIN and COMMIT included
    (Django logs them), with a log of no limit: Django's keeps 9,000, and a migration sends more.
    The log costs time, so a counted delivery is never a timed one."""
    connection.ensure_connection()
    saved_log, saved_force = connection.queries_log, connection.force_debug_cursor
    connection.queries_log = deque()
    connection.force_debug_cursor = True
    counted = Counted()
    try:
        yield counted
    finally:
        counted.count = len(connection.queries_log)
        connection.queries_log, connection.force_debug_cursor = saved_log, saved_force


def group_size(run_ids: Iterable[str]) -> int:
    """The group size the engine used for these runs' steps: the ledger rows one transaction
    wrote share its id (``xmin``), and a step's group is the size of its transaction's set; the
    median over the steps (a chain's few steps in a short last group do not pull it down)."""
    table = ProcessRunStep._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM {table} WHERE run_id = ANY(%s::uuid[])"  # noqa: S608 — our own table name
            " GROUP BY run_id, xmin::text",
            [list(run_ids)],
        )
        sizes = [row[0] for row in cursor.fetchall()]
    per_step = [size for size in sizes for _ in range(size)]
    return int(statistics.median_low(per_step)) if per_step else 1


def _verdict(label: str, ok: bool) -> str:
    return f"{label}: {'met' if ok else 'NOT met'}"


def targets_row(result: dict) -> str | None:
    """Issue 21's targets this line alone decides, each met or NOT met (None: none, or skipped)."""
    shape, value = result["shape"], result["value"]
    if value is None:
        return None
    if shape.endswith("_chain"):
        checks = [_verdict("≤ 1.5× grouped floor", result["over_grouped_floor"] <= 1.5)]
        dbos = result["over_dbos"]
        checks.append(
            "≤ 0.25× DBOS: no DBOS figure"
            if dbos is None
            else _verdict("≤ 0.25× DBOS", dbos <= 0.25)
        )
        return "; ".join(checks)
    if shape == "single_step":
        return _verdict("≤ 1.5× per-step floor", result["over_per_step_floor"] <= 1.5)
    if shape == "migration_create_stamp":
        return _verdict("≥ 3,000 rows/s", value >= 3000)
    if shape == "migration_connected":
        return _verdict("≥ 1,000 rows/s", value >= 1000)
    return None
