"""What a write step's functions answered, read: its payload (``build``), its record's address
(``update``/``delete``), and the outbound write its record waits on."""

from __future__ import annotations

from typing import Any

from processes.codes import ProcessCode
from processes.engine.plan import PlannedStep
from processes.engine.runtime import ModuleRuntime, StepCodeFailed
from records.models import RecordWriteState


class Unresolved(Exception):
    """A step's address did not resolve to a record (its message names what did not)."""


def address_value(
    runtime: ModuleRuntime, planned: PlannedStep, ctx: dict, section: str, key: str
) -> Any:
    value = runtime.call(planned.path + (section, key), ctx)
    if value in (None, ""):
        raise Unresolved(f"{section}.{key}")
    return value


def update_address(runtime: ModuleRuntime, planned: PlannedStep, ctx: dict) -> dict[str, Any]:
    update = planned.definition["update"]
    address: dict[str, Any] = {}
    if update.get("step") is not None:
        outcome = ctx["steps"].get(update["step"])
        if not outcome or not outcome.get("pgRowId"):
            raise Unresolved(f"update.step {update['step']!r}")
        address["pg_row_id"] = outcome["pgRowId"]
    elif update.get("pgRowId") is not None:
        address["pg_row_id"] = address_value(runtime, planned, ctx, "update", "pgRowId")
    else:
        address["external_id"] = address_value(runtime, planned, ctx, "update", "externalId")
    if update.get("expectedSyncVersion") is not None:
        version = runtime.call(planned.path + ("update", "expectedSyncVersion"), ctx)
        if not isinstance(version, int) or isinstance(version, bool):
            raise Unresolved("update.expectedSyncVersion")
        address["expected_sync_version"] = version
    return address


def payload_of(value: Any) -> tuple[dict, list | None]:
    if not isinstance(value, dict) or not isinstance(value.get("parent"), dict):
        raise StepCodeFailed(
            ProcessCode.BUILD_INVALID, "build must return { parent, lines? } or null"
        )
    lines = value.get("lines")
    return value["parent"], lines  # keys other than parent and lines are not read


def latest_write_state(record_id: Any) -> int | None:
    return (
        RecordWriteState.reads.filter(record_id=record_id)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
