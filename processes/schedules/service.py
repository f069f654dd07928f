"""Schedules at deploy time: read ``turbobase/schedules.json`` entries, check them against the
processes a deploy will leave behind, and make the stored set equal the declared one.

A bundle apply (``extensions.bundle``) calls these in this order: ``schedules_parse`` (the entries'
own shape, before anything is read from the database), ``schedules_check`` (the processes the
deploy leaves behind, and who deploys), then — inside the apply's one transaction —
``schedules_apply``. The schedule set is declarative: the entries a bundle sends are every bundle
schedule the instance keeps afterwards, so deleting an entry from schedules.json and deploying
removes it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from extensions.bundle_parts import PlanChange
from processes.schedules.cron import CronInvalid, cron_next, expr_check, zone_get
from processes.schedules.errors import (
    ProcessScheduled,
    ScheduleForbidden,
    ScheduleInvalid,
    ScheduleNameReserved,
    ScheduleProcessNotDeployed,
)
from processes.schedules.models import ProcessSchedule, ScheduleKind

RESERVED_PREFIX = "system."
MAX_NAME_CHARS = 200
MAX_SCHEDULES = 500
ENTRY_KEYS = frozenset({"name", "scheduleKind", "scheduleExpr", "scheduleTz", "body"})
BODY_KEYS = frozenset({"kind", "process", "input"})


@dataclass(frozen=True)
class ScheduleSpec:
    """One schedules.json entry, checked for shape; ``index`` is its place in the file."""

    index: int
    name: str
    kind: str
    expr: str
    tz: str
    body: dict[str, Any]

    @property
    def process_id(self) -> str:
        return self.body["process"]

    def field(self, name: str) -> str:
        return f"schedules[{self.index}].{name}"

    def as_entry(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "scheduleKind": self.kind,
            "scheduleExpr": self.expr,
            "scheduleTz": self.tz,
            "body": self.body,
        }


def schedule_entry(schedule: ProcessSchedule) -> dict[str, Any]:
    """A stored schedule as the schedules.json entry that declared it."""
    return {
        "name": schedule.name,
        "scheduleKind": schedule.schedule_kind,
        "scheduleExpr": schedule.schedule_expr,
        "scheduleTz": schedule.schedule_tz,
        "body": schedule.body,
    }


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ScheduleInvalid(f"{where} is required: a non-empty string", field=where)
    return value


def _spec_parse(index: int, entry: Any) -> ScheduleSpec:
    where = f"schedules[{index}]"
    if not isinstance(entry, dict):
        raise ScheduleInvalid(f"{where} must be an object", field=where)
    unknown = sorted(set(entry) - ENTRY_KEYS)
    if unknown:
        raise ScheduleInvalid(
            f"{where}.{unknown[0]} is not a schedule field ({', '.join(sorted(ENTRY_KEYS))})",
            field=f"{where}.{unknown[0]}",
        )
    name = _text(entry, "name", f"{where}.name")
    if name.lower().startswith(RESERVED_PREFIX):
        raise ScheduleNameReserved(
            f"{name!r}: names beginning {RESERVED_PREFIX!r} are the platform's own recurring jobs",
            field=f"{where}.name",
        )
    if len(name) > MAX_NAME_CHARS or name != name.strip():
        raise ScheduleInvalid(
            f"{where}.name must be at most {MAX_NAME_CHARS} characters, without "
            "leading or trailing spaces",
            field=f"{where}.name",
        )
    kind = entry.get("scheduleKind")
    if kind != ScheduleKind.CRON:
        raise ScheduleInvalid(
            f"{where}.scheduleKind must be 'cron' (got {kind!r})", field=f"{where}.scheduleKind"
        )
    expr = _text(entry, "scheduleExpr", f"{where}.scheduleExpr")
    tz = entry.get("scheduleTz", "UTC")
    for key, check, value in (("scheduleExpr", expr_check, expr), ("scheduleTz", zone_get, tz)):
        try:
            check(value)
        except CronInvalid as exc:
            raise ScheduleInvalid(f"{where}.{key}: {exc}", field=f"{where}.{key}") from exc
    return ScheduleSpec(
        index=index,
        name=name,
        kind=kind,
        expr=expr.strip(),
        tz=tz,
        body=_body_parse(entry.get("body"), f"{where}.body"),
    )


def _body_parse(body: Any, where: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ScheduleInvalid(
            f"{where} must be an object {{kind: 'process', process, input?}}", field=where
        )
    unknown = sorted(set(body) - BODY_KEYS)
    if unknown:
        raise ScheduleInvalid(
            f"{where}.{unknown[0]} is not a body field (kind, process, input)",
            field=f"{where}.{unknown[0]}",
        )
    if body.get("kind") != "process":
        raise ScheduleInvalid(
            f"{where}.kind must be 'process' (got {body.get('kind')!r})", field=f"{where}.kind"
        )
    if not isinstance(body.get("process"), str) or not body["process"].strip():
        raise ScheduleProcessNotDeployed(
            f"{where}.process is required: the id of the process to invoke",
            field=f"{where}.process",
        )
    # ``input`` is deliberately not checked here: it is checked against the process's schema on
    # every firing, because the process may be redeployed with another schema after this deploy.
    return dict(body)


def schedules_parse(raw: Any) -> list[ScheduleSpec]:
    """Every entry's own shape, in file order; the first fault raises, naming ``schedules[i].…``."""
    if not isinstance(raw, list):
        raise ScheduleInvalid("schedules must be a list of schedule entries", field="schedules")
    if len(raw) > MAX_SCHEDULES:
        raise ScheduleInvalid(
            f"at most {MAX_SCHEDULES} schedules may be deployed", field="schedules"
        )
    specs: list[ScheduleSpec] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(raw):
        spec = _spec_parse(index, entry)
        if spec.name in seen:
            raise ScheduleInvalid(
                f"{spec.name!r} is declared twice (also schedules[{seen[spec.name]}])",
                field=spec.field("name"),
            )
        seen[spec.name] = index
        specs.append(spec)
    return specs


def schedules_check(
    *,
    specs: list[ScheduleSpec] | None,
    processes_after: Collection[str],
    removing: Collection[str],
    by: Any,
) -> None:
    """The checks that read the instance: who deploys, and whether every schedule that survives
    the deploy runs a process the deploy leaves behind.

    ``specs`` None means the deploy does not touch schedules (the stored ones survive as they are);
    ``processes_after`` are the process ids deployed once the deploy is applied (a process the same
    deploy declares counts); ``removing`` are the ids the deploy removes.
    """
    stored = {s.name: s for s in ProcessSchedule.objects.all()}
    changes = specs is not None and (bool(specs) or bool(stored))
    if changes and not getattr(by, "is_staff", False):
        raise ScheduleForbidden(
            "only an administrator deploys schedules (turbobase/schedules.json)"
        )
    surviving: Iterable[tuple[str, str, str]]
    if specs is None:
        surviving = ((s.name, s.process_id, "removes") for s in stored.values())
    else:
        surviving = ((s.name, s.process_id, s.field("body.process")) for s in specs)
    for name, process_id, where in sorted(surviving):
        if process_id in processes_after:
            continue
        if process_id in removing:
            raise ProcessScheduled(
                f"the schedule {name!r} runs {process_id}, which this deploy removes; remove the "
                "schedule in the same deploy or point it at another process",
                field=where,
                id=process_id,
                schedules=[name],
            )
        raise ScheduleProcessNotDeployed(
            f"the schedule {name!r} runs {process_id!r}, which is not deployed and not declared in "
            "this deploy",
            field=where,
        )


@dataclass(frozen=True)
class ScheduleChange:
    """What a deploy does to one schedule: new / replaced / unchanged / removed."""

    name: str
    change: PlanChange
    process: str
    cron: str
    tz: str

    def as_dict(self) -> dict[str, str]:
        return {
            "name": self.name,
            "change": self.change,
            "process": self.process,
            "cron": self.cron,
            "tz": self.tz,
        }


def schedules_diff(specs: list[ScheduleSpec] | None) -> list[ScheduleChange]:
    """How the stored schedules would change; ``None`` (schedules not sent) changes nothing."""
    if specs is None:
        return []
    stored = {s.name: s for s in ProcessSchedule.objects.all()}
    changes = []
    for spec in specs:
        old = stored.get(spec.name)
        if old is None:
            change = PlanChange.NEW
        elif schedule_entry(old) == spec.as_entry():
            change = PlanChange.UNCHANGED
        else:
            change = PlanChange.REPLACED
        changes.append(ScheduleChange(spec.name, change, spec.process_id, spec.expr, spec.tz))
    declared = {spec.name for spec in specs}
    changes += [
        ScheduleChange(s.name, PlanChange.REMOVED, s.process_id, s.schedule_expr, s.schedule_tz)
        for s in stored.values()
        if s.name not in declared
    ]
    return sorted(changes, key=lambda c: c.name)


def schedules_apply(*, specs: list[ScheduleSpec], by: Any, now: datetime) -> list[ScheduleChange]:
    """Make the stored schedules exactly ``specs``. Call inside the deploy's transaction, after
    ``schedules_check``. A new or changed schedule is due next at its cron's first time after
    ``now`` and starts unpaused with no failures counted; an unchanged one keeps its state."""
    changes = schedules_diff(specs)
    by_name = {spec.name: spec for spec in specs}
    for change in changes:
        if change.change == PlanChange.REMOVED:
            ProcessSchedule.objects.filter(pk=change.name).delete()
        elif change.change in (PlanChange.NEW, PlanChange.REPLACED):
            spec = by_name[change.name]
            ProcessSchedule.objects.update_or_create(
                name=spec.name,
                defaults={
                    "schedule_kind": spec.kind,
                    "schedule_expr": spec.expr,
                    "schedule_tz": spec.tz,
                    "process_id": spec.process_id,
                    "body": spec.body,
                    "next_fire_at": cron_next(spec.expr, spec.tz, after=now),
                    "consecutive_failures": 0,
                    "is_paused": False,
                    "paused_reason": "",
                    "deployed_by": by if getattr(by, "pk", None) else None,
                },
            )
    return changes


def schedule_trigger_for(process_id: str) -> dict[str, Any] | None:
    """How ``process_id`` fires by schedule, for ``GET /v1/processes`` and the admin screen:
    ``{kind: 'schedule', name, cron, tz, timezone, isPaused}`` for the first schedule (by name) that
    runs it, or None for a process only ever invoked by hand. ``timezone`` repeats ``tz`` for the
    readers that already use that key."""
    return schedule_triggers_for([process_id]).get(process_id)


def schedule_triggers_for(process_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``schedule_trigger_for`` for many processes in one query; a process with no schedule is
    left out (the process list's batch trigger provider)."""
    triggers: dict[str, dict[str, Any]] = {}
    schedules = ProcessSchedule.objects.filter(process_id__in=list(process_ids)).order_by(
        "process_id", "name"
    )
    for schedule in schedules:
        triggers.setdefault(
            schedule.process_id,
            {
                "kind": "schedule",
                "name": schedule.name,
                "cron": schedule.schedule_expr,
                "tz": schedule.schedule_tz,
                "timezone": schedule.schedule_tz,
                "isPaused": schedule.is_paused,
            },
        )
    return triggers
