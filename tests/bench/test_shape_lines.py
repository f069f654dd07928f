"""Issue 21's shape bench: every shape's RESULT line has exactly the keys the issue names and sane
values, run for real on a tiny size against the test database (no timing: speed is never asserted
in a test; ``make bench`` measures)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from django.db import connection

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))

from shape_result import SHAPE_KEYS, shape_result  # noqa: E402

from guardrails.settings import setting_set  # noqa: E402
from processes.models import ProcessRun  # noqa: E402

CHAIN_SHAPES = ["create_chain", "update_chain", "mixed_chain", "delete_chain", "single_step"]
MIGRATION_SHAPES = [
    "migration_connected",
    "migration_create",
    "migration_create_stamp",
    "migration_create_stamp_50k",
]
ISSUE_KEYS = [
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
]


def _time_ratio(unit: str, value: float, reference: float) -> float:
    return value / reference if unit == "us_per_step" else reference / value


def _sane(line: dict, shape: str, unit: str) -> None:
    assert list(line) == ISSUE_KEYS
    assert (line["bench"], line["shape"], line["unit"]) == ("shape", shape, unit)
    for key in ("value", "statements_per_step", "per_step_floor", "grouped_floor"):
        assert isinstance(line[key], float) and line[key] > 0, (shape, key, line[key])
    for ref, over in (
        ("per_step_floor", "over_per_step_floor"),
        ("grouped_floor", "over_grouped_floor"),
        ("dbos", "over_dbos"),
    ):
        if line[ref] is None:
            assert line[over] is None, (shape, over)
            continue
        assert line[ref] > 0
        assert line[over] == pytest.approx(
            _time_ratio(unit, line["value"], line[ref]), rel=0.02, abs=0.02
        )


def _run(shapes: list[str], **sizes) -> tuple[dict[str, dict], dict[str, list], list[str]]:
    from shapes import shapes_run

    lines: list[dict] = []
    rows: list[tuple[str, str]] = []
    failed = shapes_run(shapes, emit=lines.append, row=lambda *r: rows.append(r), **sizes)
    return {line["shape"]: line for line in lines}, rows, failed


def test_the_shape_line_has_the_issue_keys_and_time_ratios_both_ways() -> None:
    assert list(SHAPE_KEYS) == ISSUE_KEYS
    per_step = shape_result(
        "create_chain",
        "us_per_step",
        1000.0,
        statements_per_step=0.06,
        per_step_floor=500.0,
        grouped_floor=2000.0,
        dbos=4000.0,
    )
    assert list(per_step) == ISSUE_KEYS
    assert (per_step["over_per_step_floor"], per_step["over_grouped_floor"]) == (2.0, 0.5)
    assert per_step["over_dbos"] == 0.25
    # rows/s: the reference's rate over the engine's, still engine time ÷ reference time.
    rate = shape_result(
        "migration_create",
        "rows_per_s",
        3000.0,
        statements_per_step=0.1,
        per_step_floor=600.0,
        grouped_floor=6000.0,
        dbos=None,
    )
    assert (rate["over_per_step_floor"], rate["over_grouped_floor"]) == (0.2, 2.0)
    assert (rate["dbos"], rate["over_dbos"]) == (None, None)
    with pytest.raises(ValueError, match="unit"):
        shape_result(
            "x",
            "ms",
            1.0,
            statements_per_step=1,
            per_step_floor=1,
            grouped_floor=1,
            dbos=None,
        )


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_every_chain_shape_prints_its_line_from_a_real_run() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the floors are bare PostgreSQL (psycopg on the bench database)")
    setting_set("processes.step_group_max", 3)  # short chains: LONG is two groups more
    lines, rows, failed = _run(["create_chain"], rounds=1, rows=0, large_rows=0, dbos=True)
    more, more_rows, more_failed = _run(
        CHAIN_SHAPES[1:], rounds=1, rows=0, large_rows=0, dbos=False
    )
    assert failed + more_failed == []
    lines.update(more)
    assert list(lines) == CHAIN_SHAPES
    for shape, line in lines.items():
        _sane(line, shape, "us_per_step")
    assert lines["update_chain"]["dbos"] is None  # not asked for here
    labels = [label for label, _ in rows + more_rows]
    assert labels.count("engine") == len(CHAIN_SHAPES)
    assert set(ProcessRun.objects.values_list("state", flat=True)) == {"committed"}


@pytest.mark.postgres_only
@pytest.mark.workers
@pytest.mark.django_db(transaction=True)
def test_every_migration_shape_prints_its_line_from_a_real_run() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the floors are bare PostgreSQL (psycopg on the bench database)")
    lines, rows, failed = _run(MIGRATION_SHAPES, rounds=1, rows=12, large_rows=24)
    assert failed == []
    assert list(lines) == MIGRATION_SHAPES
    for shape, line in lines.items():
        _sane(line, shape, "rows_per_s")
        assert (line["dbos"], line["over_dbos"]) == (None, None)  # DBOS has no eachRow
    outbound = [value for label, value in rows if label.startswith("outbound")]
    assert len(outbound) == 1 and "of 12 sent by the migration's end" in outbound[0]
    assert any(label.startswith("large rate / small rate") for label, _ in rows)


def test_a_skipped_large_migration_says_so_in_its_line() -> None:
    lines, rows, failed = _run(["migration_create_stamp_50k"], rounds=1, rows=12, large_rows=0)
    assert failed == []
    line = lines["migration_create_stamp_50k"]
    assert list(line) == ISSUE_KEYS
    assert all(line[key] is None for key in ISSUE_KEYS[3:])
    assert rows == [("skipped", "--large-rows 0: every figure null")]


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_the_await_shape_prints_its_line_from_a_real_run() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the floors are bare PostgreSQL (psycopg on the bench database)")
    lines, rows, failed = _run(["await_chain"], rounds=1, rows=0, large_rows=0, dbos=False)
    assert failed == []
    _sane(lines["await_chain"], "await_chain", "us_per_step")
    assert (lines["await_chain"]["dbos"], lines["await_chain"]["over_dbos"]) == (None, None)
    assert [label for label, _ in rows][0] == "engine"
    assert set(ProcessRun.objects.values_list("state", flat=True)) == {"committed"}
