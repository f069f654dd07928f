"""A process's ``trigger``: its shape, checked at deploy, and the one reading of it.

    trigger: { record: 'salesOrder', enters: { status: 'approved' } }   // a record enters a state
    trigger: { event: 'lead.created' }                                 // an event of that name

Checked with the field named on the first violation (``processes.contract`` calls
``trigger_check``); read back by ``trigger_of`` for the index, the process list and the admin.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from records.catalog import RecordType

TRIGGER_KEYS = frozenset({"record", "enters", "event"})
# An event name: dot-separated words of letters, digits, '_' or '-', each starting with a letter
# (``lead.created``, ``Order.paid``); what POST /v1/events may send and a trigger may name.
EVENT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)*")
EVENT_NAME_MAX_CHARS = 200


class TriggerInvalid(ValueError):
    """The trigger's shape is wrong at ``field``."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class RecordTrigger:
    process_id: str
    record_type: str
    enters: dict[str, Any]


@dataclass(frozen=True)
class EventTrigger:
    process_id: str
    event: str


def is_event_name(name: Any) -> bool:
    return (
        isinstance(name, str)
        and len(name) <= EVENT_NAME_MAX_CHARS
        and EVENT_NAME.fullmatch(name) is not None
    )


def _check_enters(enters: Any, record_type: RecordType) -> None:
    if not isinstance(enters, dict) or not enters:
        raise TriggerInvalid(
            "trigger.enters",
            "must be an object of field values the record enters, e.g. { status: 'approved' }",
        )
    for name, value in enters.items():
        where = f"trigger.enters.{name}"
        if record_type.fields is not None and name not in record_type.fields:
            raise TriggerInvalid(where, f"is not a field of {record_type.name}")
        if isinstance(value, dict) and value.get("$fn") is True:
            raise TriggerInvalid(where, "must be a value, not a function")
        if isinstance(value, dict | list):
            raise TriggerInvalid(where, "must be a string, number, boolean or null")


def trigger_check(trigger: Any, record_types: dict[str, RecordType]) -> None:
    """Raise ``TriggerInvalid`` naming the field unless ``trigger`` is one of the two shapes."""
    if not isinstance(trigger, dict):
        raise TriggerInvalid(
            "trigger", "must be an object: { record, enters } or { event } (or left out)"
        )
    unknown = sorted(set(trigger) - TRIGGER_KEYS)
    if unknown:
        raise TriggerInvalid(
            f"trigger.{unknown[0]}", "is not a key of trigger (known: enters, event, record)"
        )
    if ("record" in trigger) == ("event" in trigger):
        raise TriggerInvalid("trigger", "must name exactly one of record or event")
    if "event" in trigger:
        if "enters" in trigger:
            raise TriggerInvalid("trigger.enters", "is for record triggers only")
        if not is_event_name(trigger["event"]):
            raise TriggerInvalid(
                "trigger.event",
                f"{trigger['event']!r} is not an event name: dot-separated words of letters, "
                "digits, '_' or '-', each starting with a letter (e.g. 'lead.created'), "
                f"at most {EVENT_NAME_MAX_CHARS} characters",
            )
        return
    record_type = (
        record_types.get(trigger["record"]) if isinstance(trigger["record"], str) else None
    )
    if record_type is None:
        raise TriggerInvalid(
            "trigger.record",
            f"{trigger['record']!r} is not a record type the write boundary accepts",
        )
    if "enters" not in trigger:
        raise TriggerInvalid("trigger.enters", "is required with record")
    _check_enters(trigger["enters"], record_type)


def trigger_of(process_id: str, definition: Any) -> RecordTrigger | EventTrigger | None:
    """The deployed process's trigger (its definition was checked at deploy), or None."""
    trigger = definition.get("trigger") if isinstance(definition, dict) else None
    if not isinstance(trigger, dict):
        return None
    if isinstance(trigger.get("event"), str):
        return EventTrigger(process_id=process_id, event=trigger["event"])
    if isinstance(trigger.get("record"), str) and isinstance(trigger.get("enters"), dict):
        return RecordTrigger(
            process_id=process_id, record_type=trigger["record"], enters=dict(trigger["enters"])
        )
    return None


def trigger_shown(trigger: RecordTrigger | EventTrigger) -> dict[str, Any]:
    """How ``GET /v1/processes`` and the admin show it."""
    if isinstance(trigger, EventTrigger):
        return {"kind": "event", "event": trigger.event}
    return {"kind": "record", "record": trigger.record_type, "enters": dict(trigger.enters)}
