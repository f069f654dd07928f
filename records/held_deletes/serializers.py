"""Input and output shapes of the guardrails API."""
from __future__ import annotations

from typing import Any

from guardrails.models import HeldDelete
from kernel.errors import InvalidRequest


def held_delete_out(held: HeldDelete) -> dict[str, Any]:
    return {
        "id": held.pk,
        "recordType": held.record_type,
        "pgRowId": str(held.pg_row_id),
        "externalId": held.external_id,
        "sourceSystem": held.source_system,
        "status": held.status,
        "requestedBy": held.requested_by.get_username() if held.requested_by else None,
        "requestedAt": held.requested_at.isoformat(),
        "processRunId": held.process_run_id or None,
        "processStep": held.process_step or None,
        "decidedBy": held.decided_by.get_username() if held.decided_by else None,
        "decidedAt": held.decided_at.isoformat() if held.decided_at else None,
        "note": held.note,
    }


def decision_note_in(data: Any) -> str:
    """The optional ``{note}`` of an approve or reject; an empty body means no note."""
    if not data:
        return ""
    if not isinstance(data, dict):
        raise InvalidRequest("the body must be a JSON object", field="body")
    note = data.get("note", "")
    if note is None:
        return ""
    if not isinstance(note, str):
        raise InvalidRequest("note must be a string", field="note")
    if len(note) > 2000:
        raise InvalidRequest("note must be at most 2000 characters", field="note")
    return note
