"""What a local test is given, read and checked before anything runs.

- **fixtures** ``{"users": {name: {"groups": [...], "admin": bool}}, "records": {recordType:
  [{"parent": {...}, "lines": [...], "as"?: user}]}, "tasks": {stepId: {"output": any} | {"reject": reason},
  "by"?: user}}``: the users that exist, the records that exist before the run (written by, and
  owned by, their ``as`` user, else the ``--as`` user), and how each task step's person decides.
  ``"settings": {key: value}`` sets instance settings first, as ``PATCH /v1/settings`` does
  (a delete cap, ``processes.max_run_ms``), checked by the settings registry.
- **events** ``[{"at": "3d", "name": "order.paid", "data": {...}, "key": "...", "as": user}]``:
  sent at their virtual time after the run starts (``at`` absent: at once).
- **verdicts** ``{recordType: verdict | {"create"|"update"|"delete": verdict}}``, a verdict being
  ``"never"``, ``"confirm"``, ``{"confirm": "PO-9001"}``, ``{"unavailable": 3}`` (three attempts
  fail, then the sandbox's answer) or ``{"refuse": CODE, "field", "message"}``:
  how the connected system answers that type's writes (unnamed types: as the sandbox source does).

Each problem raises ``LocalTestFileInvalid`` naming the file's field (``fixtures.records.
purchaseOrder[0].parent.colour``), so the author knows which line to fix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from processes.durations import duration_parse
from processes.errors import LocalTestFileInvalid
from records.catalog import SYSTEM_PROTECTED, RecordTypeNotFound, record_type_get

OPERATIONS = ("create", "update", "delete")


@dataclass(frozen=True)
class FixtureRecord:
    record_type: str
    parent: dict[str, Any]
    lines: list[Any] | None
    owner: str | None = None  # who writes it (its owner, for row-level access); default ``--as``


@dataclass(frozen=True)
class TaskAnswer:
    output: Any = None
    reject: str | None = None
    by: str | None = None  # who decides (default: the assignee, or one of the assignee group's)


@dataclass(frozen=True)
class Fixtures:
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    records: tuple[FixtureRecord, ...] = ()
    tasks: dict[str, TaskAnswer] = field(default_factory=dict)


@dataclass(frozen=True)
class ScriptedEvent:
    at: timedelta
    name: str
    data: dict[str, Any]
    key: str | None = None
    sender: str | None = None


@dataclass(frozen=True)
class Verdict:
    kind: str  # "never", "confirm", "unavailable" or "refuse"
    external_id: str | None = None
    failures: int = 0  # "unavailable": how many attempts fail before the source answers
    code: str = ""
    field: str = ""
    message: str = ""


def json_value(value: Any, *, name: str) -> Any:
    """``value`` itself, or the JSON of the file it names (a ``str``/``Path``; ``@file`` too)."""
    if isinstance(value, (str, Path)):
        path = Path(str(value).removeprefix("@"))
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise LocalTestFileInvalid(f"{name}: cannot read {path}: {exc}", field=name) from None
        except ValueError as exc:
            raise LocalTestFileInvalid(f"{name}: {path} is not JSON: {exc}", field=name) from None
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise LocalTestFileInvalid(f"{where} must be a JSON object", field=where)
    return value


def fixtures_read(raw: Any) -> Fixtures:
    """Check ``raw`` (a fixtures object or its file) against its shape and the catalog."""
    data = _object(json_value(raw, name="fixtures") or {}, "fixtures")
    unknown = set(data) - {"users", "settings", "records", "tasks"}
    if unknown:
        key = sorted(unknown)[0]
        raise LocalTestFileInvalid(
            f"fixtures.{key}: not a fixtures key (users, settings, records, tasks)",
            field=f"fixtures.{key}",
        )
    users = {
        name: _object(spec or {}, f"fixtures.users.{name}")
        for name, spec in _object(data.get("users") or {}, "fixtures.users").items()
    }
    records: list[FixtureRecord] = []
    for record_type, rows in _object(data.get("records") or {}, "fixtures.records").items():
        where = f"fixtures.records.{record_type}"
        if not isinstance(rows, list):
            raise LocalTestFileInvalid(f"{where} must be a list of records", field=where)
        records += [
            _fixture_record(record_type, row, f"{where}[{n}]") for n, row in enumerate(rows)
        ]
    tasks = {
        step: _task_answer(answer, f"fixtures.tasks.{step}")
        for step, answer in _object(data.get("tasks") or {}, "fixtures.tasks").items()
    }
    settings = _object(data.get("settings") or {}, "fixtures.settings")
    return Fixtures(users=users, settings=settings, records=tuple(records), tasks=tasks)


def _fixture_record(record_type: str, row: Any, where: str) -> FixtureRecord:
    try:
        rt = record_type_get(record_type)
    except RecordTypeNotFound:
        raise LocalTestFileInvalid(
            f"{where}: record type {record_type!r} is not in the catalog",
            field=f"fixtures.records.{record_type}",
        ) from None
    row = _object(row, where)
    unknown = sorted(set(row) - {"parent", "lines", "as"})
    if unknown:
        raise LocalTestFileInvalid(
            f"{where}.{unknown[0]}: a fixture record has parent, lines and as",
            field=f"{where}.{unknown[0]}",
        )
    owner = row.get("as")
    if owner is not None and (not isinstance(owner, str) or not owner):
        raise LocalTestFileInvalid(f"{where}.as must be a user name", field=f"{where}.as")
    parent = _object(row.get("parent", {}), f"{where}.parent")
    lines = row.get("lines")
    if lines is not None and not isinstance(lines, list):
        raise LocalTestFileInvalid(f"{where}.lines must be a list", field=f"{where}.lines")
    _fields_check(record_type, parent, rt.fields, f"{where}.parent", rt.is_protected)
    for n, line in enumerate(lines or []):
        _fields_check(
            record_type, _object(line, f"{where}.lines[{n}]"), rt.line_fields, f"{where}.lines[{n}]"
        )
    return FixtureRecord(record_type, parent, lines, owner)


def _fields_check(
    record_type: str, values: dict, declared: Any, where: str, is_protected: Any = None
) -> None:
    for name, value in values.items():
        if declared is not None and name not in declared:
            raise LocalTestFileInvalid(
                f"{where}.{name}: {record_type} has no field {name!r}", field=f"{where}.{name}"
            )
        if is_protected is not None and is_protected(name) and name not in SYSTEM_PROTECTED:
            raise LocalTestFileInvalid(
                f"{where}.{name}: {record_type}.{name} is protected", field=f"{where}.{name}"
            )
        validator = declared.get(name) if declared is not None else None
        if validator is not None and not validator.is_valid(value):
            message = next(iter(validator.iter_errors(value))).message
            raise LocalTestFileInvalid(
                f"{where}.{name}: {record_type}.{name} {message}", field=f"{where}.{name}"
            )


def _task_answer(answer: Any, where: str) -> TaskAnswer:
    answer = _object(answer, where)
    by = answer.get("by")
    if by is not None and (not isinstance(by, str) or not by):
        raise LocalTestFileInvalid(f"{where}.by must be a user name", field=f"{where}.by")
    if "reject" in answer:
        if not isinstance(answer["reject"], str) or not answer["reject"].strip():
            raise LocalTestFileInvalid(f"{where}.reject must be a reason", field=f"{where}.reject")
        return TaskAnswer(reject=answer["reject"], by=by)
    if "output" not in answer:
        raise LocalTestFileInvalid(f"{where} needs an output or a reject", field=where)
    return TaskAnswer(output=answer["output"], by=by)


def offset_parse(value: Any, where: str) -> timedelta:
    """A virtual time after the run's start: a duration ('90s', '3d'); absent or 0 is at once."""
    if value in (None, 0, "0", "0s"):
        return timedelta(0)
    try:
        return duration_parse(value)
    except ValueError as exc:
        raise LocalTestFileInvalid(f"{where} {exc}", field=where) from None


def events_read(raw: Any) -> tuple[ScriptedEvent, ...]:
    """The events file, in the order of their virtual times."""
    data = json_value(raw, name="events") or []
    if not isinstance(data, list):
        raise LocalTestFileInvalid("events must be a JSON list", field="events")
    events = []
    for n, item in enumerate(data):
        where = f"events[{n}]"
        item = _object(item, where)
        if not isinstance(item.get("name"), str) or not item["name"]:
            raise LocalTestFileInvalid(f"{where}.name must be an event name", field=f"{where}.name")
        key = item.get("key")
        events.append(
            ScriptedEvent(
                at=offset_parse(item.get("at"), f"{where}.at"),
                name=item["name"],
                data=_object(item.get("data", {}), f"{where}.data"),
                key=str(key) if key is not None else None,
                sender=item.get("as"),
            )
        )
    return tuple(sorted(events, key=lambda e: e.at))


def verdicts_read(raw: Any) -> dict[tuple[str, str], Verdict]:
    """The verdicts file as ``(record type, operation) → Verdict`` (operation "" for all)."""
    data = _object(json_value(raw, name="verdicts") or {}, "verdicts")
    verdicts: dict[tuple[str, str], Verdict] = {}
    for record_type, spec in data.items():
        where = f"verdicts.{record_type}"
        try:
            record_type_get(record_type)
        except RecordTypeNotFound:
            raise LocalTestFileInvalid(
                f"{where}: record type {record_type!r} is not in the catalog", field=where
            ) from None
        if isinstance(spec, dict) and spec and set(spec) <= set(OPERATIONS):
            for operation, one in spec.items():
                verdicts[(record_type, operation)] = _verdict(one, f"{where}.{operation}")
        else:
            verdicts[(record_type, "")] = _verdict(spec, where)
    return verdicts


def _verdict(spec: Any, where: str) -> Verdict:
    if spec in ("never", "confirm"):
        return Verdict(spec)
    if isinstance(spec, dict) and "confirm" in spec:
        external_id = spec["confirm"]
        if external_id is not True and not (isinstance(external_id, str) and external_id):
            raise LocalTestFileInvalid(
                f"{where}.confirm must be the id the source mints, or true",
                field=f"{where}.confirm",
            )
        return Verdict("confirm", external_id=None if external_id is True else external_id)
    if isinstance(spec, dict) and "unavailable" in spec:
        failures = spec["unavailable"]
        if not isinstance(failures, int) or isinstance(failures, bool) or not 0 < failures <= 100:
            raise LocalTestFileInvalid(
                f"{where}.unavailable must be how many attempts fail (1 to 100)",
                field=f"{where}.unavailable",
            )
        return Verdict("unavailable", failures=failures)
    if isinstance(spec, dict) and isinstance(spec.get("refuse"), str) and spec["refuse"]:
        return Verdict(
            "refuse",
            code=spec["refuse"],
            field=str(spec.get("field") or ""),
            message=str(spec.get("message") or f"the source refused ({spec['refuse']})"),
        )
    raise LocalTestFileInvalid(
        f'{where} must be "never", "confirm", {{"confirm": id}}, {{"unavailable": n}} '
        'or {"refuse": code}',
        field=where,
    )
