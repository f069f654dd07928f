"""System schedules: declared once by their rooms, made to match at worker start, nowhere else."""

from __future__ import annotations

import pytest
from django_q.models import Schedule

from kernel.system_schedules import (
    system_schedule_declare,
    system_schedules,
    system_schedules_ensure,
)

pytestmark = pytest.mark.django_db

DECLARED = {
    "system.processes.history_purge": "processes.tasks.history_purge",
    "system.processes.run_timeout": "processes.tasks.runs_timeout_sweep",
    "system.processes.schedules": "processes.schedules.firing.schedules_tick",
    "system.processes.sweep": "processes.tasks.runs_sweep",
    "system.processes.tally": "processes.tasks.run_tally_fold",
    "system.sources.sweep": "sources.tasks.outbound_sweep_task",
}
# Every job runs every minute but the history purge, hourly.
MINUTES = {name: 60 if name == "system.processes.history_purge" else 1 for name in DECLARED}


def _rows() -> dict[str, tuple]:
    return {
        s.name: (s.func, s.schedule_type, s.minutes, s.repeats)
        for s in Schedule.objects.filter(name__startswith="system.")
    }


def test_the_rooms_declare_their_jobs_and_migrations_create_none() -> None:
    assert {job.name: job.func for job in system_schedules()} == DECLARED
    assert _rows() == {}  # a migrated database holds no system schedule until the workers start


def test_ensure_creates_corrects_and_removes_and_leaves_one_off_retries_alone() -> None:
    assert sorted(system_schedules_ensure()) == sorted(f"+{name}" for name in DECLARED)
    assert _rows() == {
        name: (func, Schedule.MINUTES, MINUTES[name], -1) for name, func in DECLARED.items()
    }
    Schedule.objects.filter(name="system.processes.sweep").update(func="os.getcwd", minutes=60)
    Schedule.objects.filter(name="system.sources.sweep").delete()
    Schedule.objects.create(
        name="system.old.job", func="x.y", schedule_type=Schedule.MINUTES, minutes=1
    )
    retry = Schedule.objects.create(
        name="system.sources.retry.customer",
        func="sources.tasks.outbound_drain_task",
        schedule_type=Schedule.ONCE,
        repeats=-1,
    )
    assert sorted(system_schedules_ensure()) == [
        "+system.sources.sweep",
        "-system.old.job",
        "~system.processes.sweep",
    ]
    assert _rows() == {
        **{name: (func, Schedule.MINUTES, MINUTES[name], -1) for name, func in DECLARED.items()},
        retry.name: (retry.func, Schedule.ONCE, None, -1),
    }
    assert system_schedules_ensure() == []  # idempotent


def test_a_declaration_is_checked() -> None:
    with pytest.raises(ValueError, match="begin 'system.'"):
        system_schedule_declare("sweep", "x.y")
    with pytest.raises(ValueError, match="declared twice, differently"):
        system_schedule_declare("system.processes.sweep", "other.func")
    system_schedule_declare(
        "system.processes.sweep", "processes.tasks.runs_sweep"
    )  # same again: fine
