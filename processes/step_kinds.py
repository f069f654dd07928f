"""The kinds of entry a process's ``steps`` list holds: the one place that defines them.

Each kind is told by the key that marks it and carries its own set of keys. The deploy contract
(``processes.contract``) checks an entry against its kind's keys, the engine's plan names a
planned step's kind from the same markers, and a key no kind takes is refused with every key of
every kind, so a new kind shows in that message the day it is added here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class EntryKind:
    name: str  # what the engine calls it (``PlannedStep.kind``; a record step is create/update/delete)
    marker: str | None  # the key whose presence makes an entry this kind; None: a record step
    keys: frozenset[str]  # every key an entry of this kind may carry
    what: str  # how a deploy error names it


GROUP = EntryKind(
    "group", "forEach", frozenset({"id", "forEach", "steps", "description"}), "a repeated group"
)
AI = EntryKind(
    "ai", "ai", frozenset({"id", "ai", "when", "description"}), "an AI step (it writes no record)"
)
TASK = EntryKind(
    "task",
    "task",
    frozenset({"id", "task", "when", "onRefused", "rollback", "description"}),
    "a task step (it writes no record)",
)
WAIT_FOR = EntryKind(
    "waitFor",
    "waitFor",
    frozenset({"id", "waitFor", "when", "description"}),
    "a waitFor step (it writes no record)",
)
SLEEP = EntryKind(
    "sleep",
    "sleep",
    frozenset({"id", "sleep", "when", "description"}),
    "a sleep step (it writes no record)",
)
RECORD = EntryKind(
    "record",
    None,
    frozenset(
        {
            "id",
            "recordType",
            "build",
            "update",
            "delete",
            "when",
            "rollback",
            "onRefused",
            "awaitSource",
        }
    ),
    "a step that writes a record",
)

# Every kind, in the order an entry is told: the marked ones first, a record step otherwise.
STEP_KINDS: tuple[EntryKind, ...] = (GROUP, AI, TASK, WAIT_FOR, SLEEP, RECORD)
# The keys some kind of entry takes: what a misspelt key is answered with.
STEP_ENTRY_KEYS: frozenset[str] = frozenset().union(*(kind.keys for kind in STEP_KINDS))


def entry_kind(entry: dict[str, Any]) -> EntryKind:
    """The kind of one entry of ``steps``. A group is also an entry with ``steps`` and no
    ``recordType`` (its ``forEach`` missing is then refused by name)."""
    if "forEach" in entry or ("steps" in entry and "recordType" not in entry):
        return GROUP
    for kind in STEP_KINDS:
        if kind.marker is not None and kind.marker in entry:
            return kind
    return RECORD
