"""The suite's tiers (``tests/conftest.py``): ``unit`` holds only tests that touch no database.

Collected in a child pytest, so the markers are the ones the whole suite's collection gives.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _collected(marks: str, *paths: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", marks, *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 5), done.stdout + done.stderr  # 5: nothing collected
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_no_database_worker_or_postgresql_test_is_unit():
    # tb_prepare's test reaches PostgreSQL with no Django fixture; the dburl tests do not.
    paths = ("tests/turbobase/test_prepare.py", "tests/turbobase/test_dburl.py")
    assert _collected("unit and (postgres_only or workers or django_db)", *paths) == []
    unit = _collected("unit", *paths)
    assert "tests/turbobase/test_prepare.py::test_make_migrate_runs_tb_prepare" in unit
