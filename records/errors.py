"""Domain exceptions of the records room."""

from __future__ import annotations

from datetime import datetime

from kernel.errors import Conflict, InvalidRequest, NotFound, Refusal
from records.codes import RecordError, RefusalCode


class PayloadInvalid(InvalidRequest):
    """The payload is not valid."""

    code = RefusalCode.INVALID_PAYLOAD


class ProtectedFieldRefused(InvalidRequest):
    """That column is owned by the instance and cannot be written."""

    code = RefusalCode.PROTECTED_FIELD


class FieldUndeclared(Refusal):
    """That field is not a column of the record type."""

    code = RefusalCode.FIELD_UNDECLARED


class FieldTypeInvalid(Refusal):
    """That value does not fit the field's declared type."""

    code = RefusalCode.FIELD_TYPE_INVALID


class RequiredFieldMissing(Refusal):
    """A required field is missing."""

    code = RefusalCode.REQUIRED_FIELD_MISSING


class AtomicWriteRequired(Refusal):
    """A transaction create needs its lines in the same write."""

    code = RefusalCode.ATOMIC_WRITE_REQUIRED


class RecordNotFound(NotFound):
    """No record you can see matches that address."""

    error = RecordError.RECORD_NOT_FOUND

    def __init__(self, message: str | None = None, *, field: str | None = None, **extra) -> None:
        super().__init__(message, **extra)
        self.code = RefusalCode.RECORD_NOT_FOUND
        self.field = field

    def body(self) -> dict:
        return {
            "error": self.error,
            "rejection": {"code": self.code, "field": self.field, "message": self.message},
        }


class SyncVersionMoved(Conflict):
    """The record's sync version moved since you read it."""

    code = RefusalCode.SYNC_VERSION_MOVED


class NotSettleConflict(Conflict):
    """The record is not waiting to be settled."""

    code = RefusalCode.NOT_SETTLE_CONFLICT


class WriteNotEntitled(Refusal):
    """You are not entitled to write records of this type."""

    http_status = 403
    code = RefusalCode.WRITE_NOT_ENTITLED


class GuardrailDenied(Refusal):
    """A guardrail rule denies this write."""

    http_status = 403
    code = RefusalCode.GUARDRAIL_DENIED


class DeleteCapExceeded(Refusal):
    """The instance's delete cap is reached; the record stays."""

    http_status = 429
    code = RefusalCode.DELETE_CAP_EXCEEDED

    def __init__(self, message: str, *, field: str, retry_at: datetime | None = None) -> None:
        super().__init__(message, field=field)
        self.retry_at = retry_at  # when the window frees: the answer's Retry-After


class HookRejection(Refusal):
    """A hook rejected the write."""

    code = RefusalCode.HOOK_REJECTED
