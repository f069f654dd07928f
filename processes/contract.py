"""The ``defineProcess`` contract, checked at deploy against the module's description.

The sandbox describes a module's default export as JSON with every function replaced by a marker
(``extensions.description.is_function``), so the whole contract is checked here in Python, once,
with the field named on the first violation and nothing stored.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, NoReturn

from extensions.codes import ExtensionError
from kernel.errors import InvalidRequest
from kernel.schemas import schema_problem
from processes.codes import ProcessCode
from processes.durations import duration_parse
from processes.events.names import event_name_problem
from processes.run_search.fields import search_declaration_problem
from processes.step_kinds import (
    AI,
    GROUP,
    RECORD,
    SLEEP,
    STEP_ENTRY_KEYS,
    TASK,
    WAIT_FOR,
    EntryKind,
    entry_kind,
)
from processes.triggers.shape import TriggerInvalid, trigger_check
from records.catalog import catalog_load

FOR_EACH_MAX_ITEMS = 100  # DEFAULT_PROCESS_FOR_EACH_MAX_ITEMS

# The keys the contract knows; anything else is refused by name rather than silently ignored
# (a misspelt ``awaitsource`` would otherwise deploy and never wait). A step's keys are its
# kind's (``processes.step_kinds``).
PROCESS_KEYS = frozenset({"id", "input", "steps", "eachRow", "onFailure", "description", "trigger"})
AI_KEYS = frozenset({"prompt", "schema"})
TASK_KEYS = frozenset({"assignee", "title", "details", "timeout"})
WAIT_FOR_KEYS = frozenset({"event", "match", "timeout"})


class ContractInvalid(InvalidRequest):
    """The process does not satisfy the defineProcess contract."""

    error = ExtensionError.INVALID_EXTENSION
    code = ProcessCode.PROCESS_CONTRACT_INVALID


class OnRefused(StrEnum):
    """A delete or task step's ``onRefused``: what a refused delete, or a rejected or expired
    task, does to the run."""

    STOP = "stop"  # the step fails and the run stops there (the default)
    CONTINUE = "continue"  # the step is recorded failed and the run goes on


class OnFailure(StrEnum):
    """A process's ``onFailure``: what a failed step does to the run."""

    STOP = "stop"  # the run ends failed, keeping what it did (the default)
    ROLLBACK = "rollback"  # the run undoes what it created, then ends


def is_function(value: Any) -> bool:
    return isinstance(value, dict) and value.get("$fn") is True


def _fail(field: str, message: str) -> NoReturn:
    raise ContractInvalid(f"{field}: {message}", field=field)


def _check_fn(step: dict, key: str, where: str, *, required: bool = False) -> None:
    if key not in step or step[key] is None:
        if required:
            _fail(f"{where}.{key}", "is required and must be a function")
        return
    if not is_function(step[key]):
        _fail(f"{where}.{key}", "must be a function")


def _check_update(step: dict, where: str) -> None:
    update = step["update"]
    if not isinstance(update, dict):
        _fail(f"{where}.update", "must be an object with step, pgRowId or externalId")
    keys = [k for k in ("step", "pgRowId", "externalId") if update.get(k) is not None]
    if len(keys) != 1:
        _fail(
            f"{where}.update",
            "must address the record by exactly one of step, pgRowId or externalId",
        )
    if "step" in keys and not (isinstance(update["step"], str) and update["step"]):
        _fail(f"{where}.update.step", "must be a step id string")
    for key in ("pgRowId", "externalId", "expectedSyncVersion"):
        if update.get(key) is not None and not is_function(update[key]):
            _fail(f"{where}.update.{key}", "must be a function of the context (ctx) => value")
    unknown = set(update) - {"step", "pgRowId", "externalId", "expectedSyncVersion"}
    if unknown:
        _fail(f"{where}.update.{sorted(unknown)[0]}", "is not an update address key")


def _check_delete(step: dict, where: str) -> None:
    delete = step["delete"]
    if not isinstance(delete, dict):
        _fail(f"{where}.delete", "must be an object with pgRowId or externalId")
    if "step" in delete:
        _fail(
            f"{where}.delete.step",
            "there is no delete.step: a run that deletes its own work is a rollback",
        )
    keys = [k for k in ("pgRowId", "externalId") if delete.get(k) is not None]
    if len(keys) != 1:
        _fail(f"{where}.delete", "must address the record by exactly one of pgRowId or externalId")
    if not is_function(delete[keys[0]]):
        _fail(f"{where}.delete.{keys[0]}", "must be a function of the context (ctx) => value")
    if delete.get("sourceSystem") is not None and not isinstance(delete["sourceSystem"], str):
        _fail(f"{where}.delete.sourceSystem", "must be a string")
    if "build" in step and step["build"] is not None:
        _fail(f"{where}.build", "a delete step has nothing to build and must not carry one")
    if step.get("rollback") == "undo":
        _fail(f"{where}.rollback", "a delete cannot be undone: a delete step is always 'keep'")


def _check_schema(schema: dict, where: str) -> None:
    """A valid JSON Schema of one document: no file, no URL, no reference round in a circle."""
    problem = schema_problem(schema)
    if problem is not None:
        _fail(problem.at(where), problem.message)


def _check_known(value: dict, known: frozenset[str], where: str, what: str) -> None:
    unknown = sorted(set(value) - known)
    if unknown:
        prefix = f"{where}." if where else ""
        _fail(
            f"{prefix}{unknown[0]}", f"is not a key of {what} (known: {', '.join(sorted(known))})"
        )


def _check_kind_keys(step: dict, kind: EntryKind, where: str) -> None:
    """An entry's keys against its kind's. An unmarked entry (a record step) may be another kind
    whose marker is misspelt, so a key no kind takes is answered with every kind's keys."""
    unknown = sorted(set(step) - kind.keys)
    if unknown and kind.marker is None and unknown[0] not in STEP_ENTRY_KEYS:
        _check_known(step, STEP_ENTRY_KEYS, where, "a step")
    _check_known(step, kind.keys, where, kind.what)


def _check_ai_step(step: dict, where: str) -> None:
    """``{ id, ai: { prompt: (ctx) => string, schema? }, when? }``: a question, no record."""
    _check_kind_keys(step, AI, where)
    ai = step["ai"]
    if not isinstance(ai, dict):
        _fail(f"{where}.ai", "must be an object with prompt and, optionally, schema")
    _check_known(ai, AI_KEYS, f"{where}.ai", "ai")
    _check_fn(ai, "prompt", f"{where}.ai", required=True)
    schema = ai.get("schema")
    if schema is not None:
        if not isinstance(schema, dict):
            _fail(f"{where}.ai.schema", "must be a JSON Schema object")
        _check_schema(schema, f"{where}.ai.schema")
    _check_fn(step, "when", where)


def _check_task_step(step: dict, where: str) -> None:
    """``{ id, task: { assignee, title, details?, timeout? }, when?, onRefused?, rollback? }``:
    a person's decision, no record."""
    _check_kind_keys(step, TASK, where)
    task = step["task"]
    if not isinstance(task, dict):
        _fail(f"{where}.task", "must be an object with assignee and title")
    _check_known(task, TASK_KEYS, f"{where}.task", "task")
    assignee = task.get("assignee")
    if not is_function(assignee):
        if not isinstance(assignee, str) or not assignee.strip():
            _fail(
                f"{where}.task.assignee",
                "is required: a username, 'group:<name>', or a function of the context",
            )
        if assignee.startswith("group:") and not assignee[len("group:") :].strip():
            _fail(f"{where}.task.assignee", "'group:' must name a group")
    title = task.get("title")
    if not is_function(title) and (not isinstance(title, str) or not title.strip()):
        _fail(f"{where}.task.title", "is required: a string or a function (ctx) => string")
    _check_fn(task, "details", f"{where}.task")
    if task.get("timeout") is not None:
        try:
            duration_parse(task["timeout"])
        except ValueError as exc:
            _fail(f"{where}.task.timeout", str(exc))
    _check_fn(step, "when", where)
    if step.get("rollback", "undo") not in ("undo", "keep"):
        _fail(f"{where}.rollback", "must be 'undo' or 'keep'")
    if step.get("onRefused", OnRefused.STOP) not in tuple(OnRefused):
        _fail(f"{where}.onRefused", "must be 'stop' or 'continue'")


def _check_wait_step(step: dict, where: str) -> None:
    """``{ id, waitFor: { event, match?, timeout }, when? }``: an event to wait for, no record."""
    _check_kind_keys(step, WAIT_FOR, where)
    wait_for = step["waitFor"]
    if not isinstance(wait_for, dict):
        _fail(f"{where}.waitFor", "must be an object with event and timeout")
    _check_known(wait_for, WAIT_FOR_KEYS, f"{where}.waitFor", "waitFor")
    problem = event_name_problem(wait_for.get("event"))
    if problem:
        _fail(f"{where}.waitFor.event", f"is required and {problem}")
    _check_fn(wait_for, "match", f"{where}.waitFor")
    if wait_for.get("timeout") is None:
        _fail(f"{where}.waitFor.timeout", "is required: how long to wait at most, e.g. '14d'")
    try:
        duration_parse(wait_for["timeout"])
    except ValueError as exc:
        _fail(f"{where}.waitFor.timeout", str(exc))
    _check_fn(step, "when", where)


def _check_sleep_step(step: dict, where: str) -> None:
    """``{ id, sleep: '30s' | (ctx) => string, when? }``: a wait on the clock, no record."""
    _check_kind_keys(step, SLEEP, where)
    if not is_function(step["sleep"]):
        try:
            duration_parse(step["sleep"])
        except ValueError as exc:
            _fail(f"{where}.sleep", f"{exc} (or a function (ctx) => string)")
    _check_fn(step, "when", where)


# The checks of the kinds that write no record, by ``EntryKind.name`` (groups: ``_check_group``).
_KIND_CHECKS = {
    AI.name: _check_ai_step,
    TASK.name: _check_task_step,
    WAIT_FOR.name: _check_wait_step,
    SLEEP.name: _check_sleep_step,
}


def _check_step(step: Any, where: str, catalog_types: set[str]) -> None:
    if not isinstance(step, dict):
        _fail(where, "must be a step object")
    kind = entry_kind(step)
    if kind is not RECORD:
        _KIND_CHECKS[kind.name](step, where)
        return
    _check_kind_keys(step, RECORD, where)
    record_type = step.get("recordType")
    if not isinstance(record_type, str) or not record_type:
        _fail(f"{where}.recordType", "is required")
    if record_type not in catalog_types:
        _fail(
            f"{where}.recordType",
            f"{record_type!r} is not a record type the write boundary accepts",
        )
    if step.get("update") is not None and step.get("delete") is not None:
        _fail(f"{where}.update", "a step either updates or deletes, not both")
    if step.get("delete") is not None:
        _check_delete(step, where)
    else:
        _check_fn(step, "build", where, required=True)
        if "onRefused" in step:
            _fail(
                f"{where}.onRefused",
                "is for delete steps only: a refused write always ends the run",
            )
    if step.get("update") is not None:
        _check_update(step, where)
    _check_fn(step, "when", where)
    if step.get("rollback", "undo") not in ("undo", "keep"):
        _fail(f"{where}.rollback", "must be 'undo' or 'keep'")
    if step.get("onRefused", OnRefused.STOP) not in tuple(OnRefused):
        _fail(f"{where}.onRefused", "must be 'stop' or 'continue'")
    if not isinstance(step.get("awaitSource", False), bool):
        _fail(f"{where}.awaitSource", "must be true or false")


def _check_steps(
    steps: Any, where: str, catalog_types: set[str], input_schema: dict, *, nested: bool
) -> None:
    if not isinstance(steps, list) or not steps:
        _fail(where, "must be a non-empty list of steps")
    seen: set[str] = set()
    for index, step in enumerate(steps):
        at = f"{where}[{index}]"
        step_id = step.get("id") if isinstance(step, dict) else None
        if not isinstance(step_id, str) or not step_id:
            _fail(f"{at}.id", "is required")
        if ":" in step_id:
            _fail(
                f"{at}.id",
                "must not contain ':' (it separates group, index and step in ledger ids)",
            )
        if step_id in seen:
            _fail(f"{at}.id", f"duplicate step id {step_id!r}")
        seen.add(step_id)
        if entry_kind(step) is GROUP:
            if nested:
                _fail(f"{at}.forEach", "groups do not nest")
            _check_group(step, at, catalog_types, input_schema)
        else:
            _check_step(step, at, catalog_types)


def _check_group(group: dict, where: str, catalog_types: set[str], input_schema: dict) -> None:
    _check_kind_keys(group, GROUP, where)
    for_each = group.get("forEach")
    if (
        not isinstance(for_each, dict)
        or not isinstance(for_each.get("input"), str)
        or not for_each["input"]
    ):
        _fail(f"{where}.forEach.input", "must name a property of input")
    properties = input_schema.get("properties")
    if isinstance(properties, dict) and for_each["input"] not in properties:
        _fail(
            f"{where}.forEach.input", f"{for_each['input']!r} is not a property of the input schema"
        )
    _check_steps(group.get("steps"), f"{where}.steps", catalog_types, input_schema, nested=True)


def process_contract_check(definition: Any) -> dict:
    """Validate a described ``defineProcess`` default export; returns it, or raises ContractInvalid."""
    if not isinstance(definition, dict):
        _fail("default", "the default export must be defineProcess({...})")
    process_id = definition.get("id")
    if not isinstance(process_id, str) or not process_id.strip():
        _fail("id", "is required and must be a string")
    schema = definition.get("input")
    if not isinstance(schema, dict):
        _fail("input", "is required and must be a JSON Schema object")
    _check_schema(schema, "input")
    searchable = search_declaration_problem(schema)
    if searchable is not None:
        _fail(*searchable)
    if definition.get("onFailure", OnFailure.STOP) not in tuple(OnFailure):
        _fail("onFailure", "must be 'stop' or 'rollback'")
    each_row = definition.get("eachRow")
    if each_row is not None:
        if not isinstance(each_row, dict) or not is_function(each_row.get("outstanding")):
            _fail("eachRow.outstanding", "must be a function (input) => PostgREST query")
        if not isinstance(each_row.get("key"), str) or not each_row["key"]:
            _fail("eachRow.key", "must be a string naming the row's identifying column")
    if definition.get("description") is not None and not isinstance(definition["description"], str):
        _fail("description", "must be a string")
    catalog_types = set(catalog_load().types)
    if definition.get("trigger") is not None:
        try:
            trigger_check(definition["trigger"], catalog_load().types)
        except TriggerInvalid as exc:
            _fail(exc.field, exc.message)
    _check_steps(definition.get("steps"), "steps", catalog_types, schema, nested=False)
    _check_known(definition, PROCESS_KEYS, "", "defineProcess")
    if each_row is not None:
        for index, step in enumerate(definition["steps"]):
            inner = step.get("steps") if "forEach" in step else None
            for at, found in (
                [(f"steps[{index}]", step)]
                if inner is None
                else [(f"steps[{index}].steps[{n}]", s) for n, s in enumerate(inner)]
            ):
                if "task" in found:
                    _fail(
                        f"{at}.task",
                        "a migration's rows are not waited on by a person: tasks are for chains",
                    )
                if "waitFor" in found:
                    _fail(
                        f"{at}.waitFor",
                        "a migration's rows do not wait for events: waitFor is for chains",
                    )
                if "sleep" in found:
                    _fail(f"{at}.sleep", "a migration's rows do not sleep: sleep is for chains")
    return definition
