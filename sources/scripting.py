"""Scripting the sandbox source per record type, for tests and demos."""

from __future__ import annotations

from records.catalog import record_type_get
from records.models import WriteOperation
from sources.models import SandboxScript

OPERATIONS = ("", *WriteOperation.values)  # blank: every operation


def sandbox_script_set(
    record_type: str,
    *,
    operation: str = "",
    latency_ms: int = 0,
    refuse_code: str = "",
    refuse_field: str = "",
    refuse_message: str = "",
    transient_failures: int = 0,
    never_answer: bool = False,
    settle_conflict: bool = False,
) -> SandboxScript:
    """Replace the sandbox's behaviour for ``record_type`` (every field not named goes back to normal)."""
    record_type_get(record_type)
    if operation not in OPERATIONS:
        raise ValueError(f"operation must be one of {OPERATIONS}, not {operation!r}")
    if refuse_message and not refuse_code:
        raise ValueError("a refusal needs a refuse_code")
    script, _ = SandboxScript.objects.update_or_create(
        record_type=record_type,
        defaults=dict(
            operation=operation,
            latency_ms=latency_ms,
            refuse_code=refuse_code,
            refuse_field=refuse_field,
            refuse_message=refuse_message,
            transient_failures=transient_failures,
            never_answer=never_answer,
            settle_conflict=settle_conflict,
        ),
    )
    return script


def sandbox_script_clear(record_type: str | None = None) -> int:
    """Back to normal behaviour for one record type, or for all of them."""
    rows = SandboxScript.objects.all()
    if record_type is not None:
        rows = rows.filter(record_type=record_type)
    return rows.delete()[0]


def sandbox_script_for(record_type: str, operation: str) -> SandboxScript | None:
    """The script in force for this write, if any."""
    script = SandboxScript.objects.filter(record_type=record_type).first()
    if script is None or (script.operation and script.operation != operation):
        return None
    return script
