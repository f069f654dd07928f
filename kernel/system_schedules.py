"""The platform's recurring jobs, each declared once by the room that owns it.

A room declares its jobs in ``AppConfig.ready()`` (``system_schedule_declare``); the workers'
start-up (``manage.py qcluster``) calls ``system_schedules_ensure`` and makes the django-q2
``Schedule`` rows match: a missing job is created, a changed one corrected, and a ``system.*``
repeating job nobody declares any more removed. Migrations hold none of them, so a job is never
described twice and a database restored without its schedule rows heals at the next start.
One-off ``system.*`` rows (an outbound retry, ``Schedule.ONCE``) are work in flight, not
declarations, and are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "system."


@dataclass(frozen=True)
class SystemSchedule:
    name: str
    func: str  # a dotted path django-q2 imports
    minutes: int = 1


_declared: dict[str, SystemSchedule] = {}


def system_schedule_declare(name: str, func: str, *, minutes: int = 1) -> None:
    """Declare a recurring platform job (idempotent for the same declaration)."""
    if not name.startswith(PREFIX):
        raise ValueError(f"system schedule names begin {PREFIX!r}: {name!r}")
    job = SystemSchedule(name=name, func=func, minutes=minutes)
    if _declared.get(name, job) != job:
        raise ValueError(f"system schedule {name!r} is declared twice, differently")
    _declared[name] = job


def system_schedules() -> tuple[SystemSchedule, ...]:
    return tuple(sorted(_declared.values(), key=lambda job: job.name))


def system_schedules_ensure() -> list[str]:
    """Make the schedule rows match the declarations; answer what changed (``+``, ``~``, ``-``)."""
    from django_q.models import Schedule

    changes: list[str] = []
    for job in system_schedules():
        wanted = {
            "func": job.func,
            "schedule_type": Schedule.MINUTES,
            "minutes": job.minutes,
            "repeats": -1,
        }
        row, created = Schedule.objects.get_or_create(name=job.name, defaults=wanted)
        if created:
            changes.append(f"+{job.name}")
        elif any(getattr(row, field) != value for field, value in wanted.items()):
            Schedule.objects.filter(pk=row.pk).update(**wanted)
            changes.append(f"~{job.name}")
    stale = (
        Schedule.objects.filter(name__startswith=PREFIX)
        .exclude(schedule_type=Schedule.ONCE)
        .exclude(name__in=_declared)
    )
    for name in stale.values_list("name", flat=True):
        changes.append(f"-{name}")
    stale.delete()
    return changes
