"""``/v1/data/<recordType>``: thin views over the write boundary."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kernel.openapi import error_responses
from kernel.scopes import DATA_WRITE
from kernel.users import acting_user
from records.boundary import record_create, record_delete, record_settle, record_update
from records.errors import PayloadInvalid
from records.idempotency import idempotency_key_check
from records.outcomes import WriteOutcome
from records.serializers import (
    RecordCreateIn,
    RecordDeleteIn,
    RecordSettleIn,
    RecordUpdateIn,
    WriteResultOut,
    write_result_out,
)
from records.trail import Actor

_STATUS = {
    WriteOutcome.CREATED: 201,
    WriteOutcome.DUPLICATE: 200,
    WriteOutcome.UPDATED: 200,
    WriteOutcome.DELETED: 200,
    WriteOutcome.QUEUED: 202,
    WriteOutcome.HELD: 202,
    WriteOutcome.SETTLED: 200,
}


def _body(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise PayloadInvalid("the body must be a JSON object", field="body")
    return request.data


def idempotency_key_read(request: Request, body: dict[str, Any]) -> str | None:
    """The caller's idempotency key (header first, then body), or 400 naming where it came from.

    Stored as ``user:<pk>:<key>`` in a 255-character column, so the caller's part is bounded.
    """
    field, key = "Idempotency-Key", request.headers.get("Idempotency-Key")
    if not key:
        field, key = "idempotencyKey", body.get("idempotencyKey")
    return idempotency_key_check(key, field)


# Every write can be refused for the same reasons: the body, the caller, the record, the rules.
WRITE_ERRORS = error_responses(400, 401, 403, 404, 409, 422, 429)
IDEMPOTENCY_HEADER = OpenApiParameter(
    "Idempotency-Key",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Same as the body's idempotencyKey: a retry answers the first write.",
)


def _written(description: str) -> OpenApiResponse:
    return OpenApiResponse(WriteResultOut, description=description)


def _answer(result) -> Response:
    return Response(write_result_out(result), status=_STATUS[result.outcome])


class RecordDataView(APIView):
    """Create (POST), change (PATCH) or delete (DELETE) one record of ``record_type``."""

    required_scopes = {"post": DATA_WRITE, "patch": DATA_WRITE, "delete": DATA_WRITE}

    @extend_schema(
        request=RecordCreateIn,
        parameters=[IDEMPOTENCY_HEADER],
        responses={
            201: _written("Created (outcome created)."),
            200: _written("This idempotency key already wrote this record (outcome duplicate)."),
            **WRITE_ERRORS,
        },
    )
    def post(self, request: Request, record_type: str) -> Response:
        body = _body(request)
        key = idempotency_key_read(request, body)
        return _answer(
            record_create(
                actor=Actor(user=acting_user(request)),
                record_type=record_type,
                parent=body.get("parent"),
                lines=body.get("lines"),
                # An app's key is its own: namespaced by user so two apps' keys never collide.
                idempotency_key=f"user:{request.user.pk}:{key}" if key else None,
            )
        )

    @extend_schema(
        request=RecordUpdateIn,
        responses={200: _written("Changed (outcome updated)."), **WRITE_ERRORS},
    )
    def patch(self, request: Request, record_type: str) -> Response:
        body = _body(request)
        version = body.get("expectedSyncVersion")
        if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
            raise PayloadInvalid(
                "expectedSyncVersion must be an integer", field="expectedSyncVersion"
            )
        return _answer(
            record_update(
                actor=Actor(user=acting_user(request)),
                record_type=record_type,
                parent=body.get("parent"),
                pg_row_id=body.get("pgRowId"),
                external_id=body.get("externalId"),
                expected_sync_version=version,
            )
        )

    @extend_schema(
        request=RecordDeleteIn,
        responses={
            200: _written("Deleted here; nothing to tell a source (outcome deleted)."),
            202: _written(
                "Hidden now; the delete is queued for the source (queued) or held for an "
                "operator on Compliance → Guardrails (held)."
            ),
            **WRITE_ERRORS,
        },
    )
    def delete(self, request: Request, record_type: str) -> Response:
        body = _body(request)
        return _answer(
            record_delete(
                actor=Actor(user=acting_user(request)),
                record_type=record_type,
                pg_row_id=body.get("pgRowId"),
                external_id=body.get("externalId"),
                source_system=body.get("sourceSystem"),
            )
        )


class RecordSettleView(APIView):
    """Link a record whose upstream create landed but whose link back failed."""

    required_scopes = {"post": DATA_WRITE}

    @extend_schema(
        request=RecordSettleIn,
        responses={200: _written("Linked (outcome settled)."), **WRITE_ERRORS},
    )
    def post(self, request: Request, record_type: str) -> Response:
        body = _body(request)
        if not body.get("pgRowId"):
            raise PayloadInvalid("pgRowId is required", field="pgRowId")
        return _answer(
            record_settle(
                actor=Actor(user=acting_user(request)),
                record_type=record_type,
                pg_row_id=body["pgRowId"],
            )
        )
