"""The step bench's RESULT line carries exactly the keys issue 11 names, DBOS or not (no timing here:
speed is never asserted in a test; ``make bench`` measures)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))

from step import StepResult  # noqa: E402

STEP_KEYS = [
    "bench",
    "floor_us",
    "bare_insert_us",
    "engine_step_us",
    "dbos_step_us",
    "engine_over_floor",
    "engine_over_dbos",
    "statements_per_step",
]


def _result(dbos_us: float | None) -> dict:
    return StepResult(
        floor_us=500.0,
        bare_insert_us=250.0,
        engine_step_us=1000.0,
        engine_run_per_step_us=1100.0,
        statements_per_step=5.0,
        dbos_step_us=dbos_us,
        dbos_note="",
    ).result()


def test_step_result_has_the_issue_keys_and_ratios_of_this_run() -> None:
    res = _result(4000.0)
    assert list(res) == STEP_KEYS
    assert (res["bench"], res["engine_over_floor"], res["engine_over_dbos"]) == ("step", 2.0, 0.25)


def test_step_result_without_dbos_reports_null_ratios() -> None:
    res = _result(None)
    assert list(res) == STEP_KEYS
    assert (res["dbos_step_us"], res["engine_over_dbos"]) == (None, None)
