"""Output shapes of the records API."""
from __future__ import annotations

from typing import Any

from records.boundary import WriteResult
from records.models import Record


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
