"""A run's step plan: the definition's steps with every ``forEach`` group expanded.

Expansion reads only the validated input, never author code, so the group cap is checked before
any of the author's code runs and before the first write.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from processes.engine.statuses import StepKind
from processes.errors import InputInvalid
from processes.step_kinds import RECORD, entry_kind


class ForEachCapExceeded(Exception):
    """A group would repeat more times than the instance allows."""

    def __init__(self, group_id: str, count: int, cap: int) -> None:
        self.group_id, self.count, self.cap = group_id, count, cap
        super().__init__(
            f"group {group_id!r} would repeat {count} times, over the cap of {cap} "
            f"(setting processes.for_each_max_items); nothing was written — a chain that wants "
            "hundreds of legs wants eachRow"
        )


@dataclass(frozen=True)
class PlannedStep:
    """One step as the run performs it: ledger id, where its functions live, its iteration."""

    step_id: str  # the ledger id: 'po', or 'leg:2:doc' inside a group
    path: tuple[str | int, ...]  # where the step object is in the default export
    definition: dict[str, Any]
    item: Any = None
    index: int | None = None

    # Asked several times a step: worked out once (a frozen dataclass still has a __dict__).
    @cached_property
    def kind(self) -> StepKind:
        """The entry's kind (``processes.step_kinds``), a record step's as create, update or delete."""
        marked = entry_kind(self.definition)
        if marked is not RECORD:
            return StepKind(marked.name)
        if self.definition.get("delete") is not None:
            return StepKind.DELETE
        return StepKind.UPDATE if self.definition.get("update") is not None else StepKind.CREATE

    @cached_property
    def is_keep(self) -> bool:
        return (
            self.kind in (StepKind.DELETE, StepKind.AI, StepKind.WAIT_FOR, StepKind.SLEEP)
            or self.definition.get("rollback") == "keep"
        )


def plan_build(
    definition: dict[str, Any], run_input: Any, *, for_each_cap: int
) -> list[PlannedStep]:
    plan: list[PlannedStep] = []
    for position, entry in enumerate(definition["steps"]):
        if "forEach" not in entry:
            plan.append(PlannedStep(entry["id"], ("steps", position), entry))
            continue
        name = entry["forEach"]["input"]
        items = run_input.get(name) if isinstance(run_input, dict) else None
        if not isinstance(items, list):
            raise InputInvalid(
                f"{name} must be an array: group {entry['id']!r} repeats over it", field=name
            )
        if len(items) > for_each_cap:
            raise ForEachCapExceeded(entry["id"], len(items), for_each_cap)
        for index, item in enumerate(items):
            for inner_position, inner in enumerate(entry["steps"]):
                plan.append(
                    PlannedStep(
                        f"{entry['id']}:{index}:{inner['id']}",
                        ("steps", position, "steps", inner_position),
                        inner,
                        item=item,
                        index=index,
                    )
                )
    return plan
