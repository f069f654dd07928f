"""The Processes list: every trigger and schedule, the last five runs as links with state and time,
in the same number of queries for 5 processes as for 50."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from guardrails.settings import _rows
from processes.models import Process, ProcessRun, RunState
from processes.schedules.models import ProcessSchedule

pytestmark = pytest.mark.django_db

PROCESSES = "/admin/processes/process/"


def _processes(count: int, *, first: int = 0, runs_each: int = 7) -> list[str]:
    """``count`` processes, each with ``runs_each`` runs a minute apart and two schedules."""
    ids = [f"acme:p{n:03d}" for n in range(first, first + count)]
    Process.objects.bulk_create([Process(id=pid) for pid in ids])
    base = timezone.now() - timedelta(hours=1)
    runs = [
        ProcessRun(process_id=pid, state=RunState.COMMITTED, module_version=1, reason=f"run {k}")
        for pid in ids
        for k in range(runs_each)
    ]
    ProcessRun.objects.bulk_create(runs)
    for k, run in enumerate(runs):  # created_at is auto_now_add: spread the runs over the hour
        run.created_at = base + timedelta(minutes=k % runs_each)
    ProcessRun.objects.bulk_update(runs, ["created_at"])
    ProcessSchedule.objects.bulk_create(
        [
            ProcessSchedule(
                name=f"{pid}-{when}",
                schedule_expr=expr,
                process_id=pid,
                is_paused=when == "weekly",
                paused_reason="3 failures in a row" if when == "weekly" else "",
                body={"kind": "process", "process": pid},
                schedule_tz="Europe/Paris",
            )
            for pid in ids
            for when, expr in (("nightly", "0 2 * * *"), ("weekly", "0 6 * * 1"))
        ]
    )
    return ids


def _list_queries(operator) -> tuple[int, str]:
    _rows.clear()  # the instance settings are cached between requests: read them each time
    with CaptureQueriesContext(connection) as queries:
        res = operator.get(PROCESSES)
    assert res.status_code == 200
    return len(queries.captured_queries), res.content.decode()


def test_the_list_costs_the_same_queries_for_5_processes_as_for_50(operator):
    _processes(5)
    five, page = _list_queries(operator)
    assert page.count('<ul class="last-runs">') == 5
    _processes(45, first=5)
    fifty, page = _list_queries(operator)
    assert page.count('<ul class="last-runs">') == 50
    assert fifty == five, (five, fifty)


def test_each_row_shows_every_trigger_and_schedule_and_the_last_five_runs_newest_first(operator):
    (pid,) = _processes(1)
    _, page = _list_queries(operator)
    row = page[page.index(f">{pid}<") :]
    row = row[: row.index("</tr>")]
    assert "<li>by hand</li>" in row
    assert f"{pid}-nightly</a>: <code>0 2 * * *</code> (Europe/Paris)</li>" in row
    paused = '<strong class="paused">paused</strong>: 3 failures in a row'
    assert f"{pid}-weekly</a>: <code>0 6 * * 1</code> (Europe/Paris) — {paused}" in row
    newest = list(ProcessRun.objects.filter(process_id=pid).order_by("-created_at")[:5])
    shown = re.findall(
        r'<a href="/admin/processes/processrun/([0-9a-f-]+)/change/" title="([^"]*)">(\w+)</a> (\S+ \S+)</li>',
        row,
    )
    assert [(run_id, reason, state) for run_id, reason, state, _ in shown] == [
        (str(run.pk), run.reason, run.state) for run in newest
    ]
    assert [when for *_, when in shown] == [
        f"{timezone.localtime(run.created_at):%Y-%m-%d %H:%M}" for run in newest
    ]
