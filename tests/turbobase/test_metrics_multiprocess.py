"""Multiprocess mode: what two other processes count, one scrape here adds up (issue 22, item 3).

The processes are real interpreters with Django set up from the project's settings, so they count
into the folder ``settings`` named (``PROMETHEUS_MULTIPROC_DIR`` under ``TURBOBASE_VAR``), as a
gunicorn worker and a django-q2 worker do; ``tb_run`` empties that folder at start.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kernel.metrics import multiproc_dir, multiproc_dir_clean
from tests.turbobase.metrics_support import metrics_client, scrape, value

BASE_DIR = Path(__file__).resolve().parents[2]

COUNT = """
import django, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "turbobase.settings")
django.setup()
from kernel.metrics import RUNS_STARTED, STEP_SECONDS
RUNS_STARTED.labels(process=sys.argv[1]).inc(int(sys.argv[2]))
STEP_SECONDS.labels(kind=sys.argv[1]).observe(0.2)
print(os.getpid())
"""

SHOW_FOLDER = """
import django, os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "turbobase.settings")
django.setup()
from kernel.metrics import multiproc_dir
print(multiproc_dir())
"""


def _count_in_another_process(label: str, n: int) -> int:
    done = subprocess.run(
        [sys.executable, "-c", COUNT, label, str(n)],
        cwd=BASE_DIR,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return int(done.stdout.strip())


@pytest.mark.django_db
def test_one_scrape_adds_up_the_counts_of_two_other_processes(alice):
    label = f"mp:{uuid.uuid4().hex[:8]}"
    pids = {_count_in_another_process(label, 3), _count_in_another_process(label, 4)}
    assert len(pids) == 2 and os.getpid() not in pids
    folder = multiproc_dir()
    assert folder is not None and any(str(pid) in p.name for p in folder.iterdir() for pid in pids)
    read = scrape(metrics_client(alice))
    assert value(read, "turbobase_runs_started_total", process=label) == 7
    assert value(read, "turbobase_step_duration_seconds_count", kind=label) == 2
    assert value(read, "turbobase_step_duration_seconds_sum", kind=label) == pytest.approx(0.4)


def test_the_folder_is_made_under_turbobase_var_and_cleaning_empties_it(tmp_path, monkeypatch):
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env["TURBOBASE_VAR"] = str(tmp_path / "var")
    shown = subprocess.run(
        [sys.executable, "-c", SHOW_FOLDER],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.strip()
    assert shown == str(tmp_path / "var" / "prometheus")
    assert (tmp_path / "var" / "prometheus").is_dir()
    elsewhere = tmp_path / "prometheus"
    elsewhere.mkdir()
    (elsewhere / "counter_123.db").write_bytes(b"old")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(elsewhere))
    multiproc_dir_clean()
    assert elsewhere.is_dir() and list(elsewhere.iterdir()) == []
