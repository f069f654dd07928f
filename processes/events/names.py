"""What an event's name may be: the triggers' one rule (``processes.triggers.shape``), worded for
``POST /v1/events`` and a ``waitFor`` step's ``event`` — a step waits only for a sendable name."""

from __future__ import annotations

from processes.triggers.shape import EVENT_NAME_MAX_CHARS, is_event_name

__all__ = ["EVENT_NAME_MAX_CHARS", "event_name_problem"]


def event_name_problem(name: object) -> str | None:
    """Why ``name`` is not an event name, or None."""
    if is_event_name(name):
        return None
    if not isinstance(name, str) or not name:
        return "must be a non-empty string such as 'order.paid'"
    if len(name) > EVENT_NAME_MAX_CHARS:
        return f"is {len(name)} characters, over the {EVENT_NAME_MAX_CHARS} a name may have"
    return (
        "must be dot-separated words of letters, digits, '_' or '-', each starting with a letter "
        f"(e.g. 'order.paid'), not {name[:40]!r}"
    )
