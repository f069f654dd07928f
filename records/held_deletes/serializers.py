"""Input and output shapes of the held-deletes API.

``held_delete_out`` and ``decision_note_in`` render and parse; the serializer classes say the same
shapes to the OpenAPI schema (checked against real answers in ``tests/turbobase/test_openapi.py``).
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from guardrails.models import HeldDelete, HeldStatus
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


class HeldDeleteOut(serializers.Serializer):
    """A delete held for an operator; the record stays hidden until it is decided."""

    id = serializers.IntegerField()
    recordType = serializers.CharField()
    pgRowId = serializers.UUIDField()
    externalId = serializers.CharField(allow_null=True)
    sourceSystem = serializers.CharField()
    status = serializers.ChoiceField(choices=HeldStatus.choices)
    requestedBy = serializers.CharField(allow_null=True, help_text="Username.")
    requestedAt = serializers.DateTimeField()
    processRunId = serializers.CharField(allow_null=True, help_text="The run that asked, if any.")
    processStep = serializers.CharField(allow_null=True)
    decidedBy = serializers.CharField(allow_null=True, help_text="Username.")
    decidedAt = serializers.DateTimeField(allow_null=True)
    note = serializers.CharField(allow_blank=True)


class HeldDeleteListOut(serializers.Serializer):
    """Pending first (oldest first), then decided ones (newest first)."""

    heldDeletes = HeldDeleteOut(many=True)


class DecisionIn(serializers.Serializer):
    """An approve or reject; the body may be empty."""

    note = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=2000)
