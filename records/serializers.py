"""Shapes of the records API: the functions render answers; the serializers describe bodies.

The views parse bodies by hand (the boundary names the field at fault) and render with
``record_out``/``write_result_out``; the serializer classes below say the same shapes to the
OpenAPI schema, and ``tests/turbobase/test_openapi.py`` checks real answers against them.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from kernel.openapi import ErrorSerializer
from records.boundary import WriteResult
from records.models import Record, SyncState
from records.outcomes import WriteOutcome


def record_out(record: Record) -> dict[str, Any]:
    return {
        "pgRowId": str(record.pg_row_id),
        "recordType": record.record_type,
        "externalId": record.external_id,
        "sourceSystem": record.source_system or None,
        "syncState": record.sync_state,
        "syncVersion": record.sync_version,
        "syncedAt": record.synced_at.isoformat() if record.synced_at else None,
        "parent": record.fields,
        "lines": record.lines,
    }


def write_result_out(result: WriteResult) -> dict[str, Any]:
    body = record_out(result.record)
    body["outcome"] = result.outcome
    if result.code:
        body["notice"] = {"code": result.code, "field": None, "message": result.message}
    return body


# --- the bodies, for the schema ---------------------------------------------------------------

WRITE_OUTCOMES = tuple(outcome.value for outcome in WriteOutcome)


class NoticeOut(serializers.Serializer):
    """Something the write did that is not a refusal (e.g. a delete held for an operator)."""

    code = serializers.CharField()
    field = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class RecordOut(serializers.Serializer):
    """One record as the API answers it."""

    pgRowId = serializers.UUIDField()
    recordType = serializers.CharField()
    externalId = serializers.CharField(
        allow_null=True, help_text="The connected system's id, once it has one."
    )
    sourceSystem = serializers.CharField(allow_null=True)
    syncState = serializers.ChoiceField(choices=SyncState.choices)
    syncVersion = serializers.IntegerField()
    syncedAt = serializers.DateTimeField(allow_null=True)
    # "parent" is the contract's name; DRF takes declared fields off the class, so the field never
    # shadows Field.parent at run time (mypy cannot know).
    parent = serializers.DictField(help_text="The record's fields.")  # type: ignore[assignment]
    lines = serializers.ListField(child=serializers.DictField(), help_text="The record's lines.")


class WriteResultOut(RecordOut):
    """The record after a write, what the boundary did with it, and a notice when there is one."""

    outcome = serializers.ChoiceField(choices=WRITE_OUTCOMES)
    notice = NoticeOut(required=False)


class RecordCreateIn(serializers.Serializer):
    """``POST /v1/data/<recordType>``; the ``Idempotency-Key`` header may stand for the key."""

    parent = serializers.DictField(help_text="The record's fields.")  # type: ignore[assignment]
    lines = serializers.ListField(child=serializers.DictField(), required=False)
    idempotencyKey = serializers.CharField(
        required=False,
        max_length=200,
        help_text="A retry with the same key answers the first write (outcome duplicate).",
    )


class RecordAddressIn(serializers.Serializer):
    """Which record: ``pgRowId`` or ``externalId`` (one of them)."""

    pgRowId = serializers.UUIDField(required=False)
    externalId = serializers.CharField(required=False)


class RecordUpdateIn(RecordAddressIn):
    """``PATCH /v1/data/<recordType>``: the fields to change, optionally from a known version."""

    expectedSyncVersion = serializers.IntegerField(
        required=False, help_text="Refused with 409 when the record has moved past this version."
    )
    parent = serializers.DictField(help_text="The fields to change.")  # type: ignore[assignment]


class RecordDeleteIn(RecordAddressIn):
    """``DELETE /v1/data/<recordType>``."""

    sourceSystem = serializers.CharField(required=False)


class RecordSettleIn(serializers.Serializer):
    """``POST /v1/data/<recordType>/settle``."""

    pgRowId = serializers.UUIDField()


class BatchIn(serializers.Serializer):
    """``POST /v1/batch``: several PostgREST reads, each ``"<resource>?<query>"`` as /v1/rest."""

    reads = serializers.ListField(
        child=serializers.CharField(),
        min_length=1,
        help_text='e.g. ["vendor?select=*&limit=5", "purchaseOrder?status=eq.open"]',
    )


class BatchRowsOut(serializers.Serializer):
    """One read's rows: at most the batch row cap (``processes.batch_max_rows``)."""

    rows = serializers.ListField(
        child=serializers.DictField(), help_text="Rows keyed by column name."
    )
    truncated = serializers.BooleanField(help_text="True when the read had more rows than the cap.")


class BatchReadErrorOut(ErrorSerializer):
    """One read's refusal, with the HTTP status /v1/rest would have answered."""

    status = serializers.IntegerField()


class BatchReadRefusedOut(serializers.Serializer):
    """A read that was refused; the other reads of the batch still answer."""

    error = BatchReadErrorOut()


class BatchOut(serializers.Serializer):
    """One entry per read, in the order sent."""

    results = PolymorphicProxySerializer(
        component_name="BatchResult",
        resource_type_field_name=None,
        serializers=[BatchRowsOut, BatchReadRefusedOut],
        many=True,
    )
