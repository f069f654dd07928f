"""Codes the records room puts on what it answers and keeps: refusals, notices, reason codes.

One enum; a code is never reused for another meaning. The values are the contract (clients and
process steps read them), so a member's value is never renamed; the seed's own codes keep the
seed's spelling, ``write_settle_conflict`` in lower case included.
"""

from __future__ import annotations

from enum import StrEnum


class RefusalCode(StrEnum):
    STEP_ADDRESS_UNRESOLVED = "STEP_ADDRESS_UNRESOLVED"
    ATOMIC_WRITE_REQUIRED = "ATOMIC_WRITE_REQUIRED"
    SOURCE_AWAITING_CONFIRMATION = "SOURCE_AWAITING_CONFIRMATION"
    SOURCE_APPLIED_UNLINKED = "SOURCE_APPLIED_UNLINKED"
    MANDATORY_FIELD_MISSING = "MANDATORY_FIELD_MISSING"
    NOT_SETTLE_CONFLICT = "NOT_SETTLE_CONFLICT"
    REQUIRED_FIELD_MISSING = "REQUIRED_FIELD_MISSING"
    PROTECTED_FIELD = "PROTECTED_FIELD"
    FIELD_UNDECLARED = "FIELD_UNDECLARED"  # not a column of the record type (catalog "fields")
    FIELD_TYPE_INVALID = "FIELD_TYPE_INVALID"  # a value its declared JSON Schema refuses
    INVALID_PAYLOAD = "INVALID_PAYLOAD"
    SYNC_VERSION_MOVED = "SYNC_VERSION_MOVED"
    RECORD_NOT_FOUND = "RECORD_NOT_FOUND"
    WRITE_NOT_ENTITLED = "WRITE_NOT_ENTITLED"
    GUARDRAIL_DENIED = "GUARDRAIL_DENIED"
    DELETE_CAP_EXCEEDED = "DELETE_CAP_EXCEEDED"
    RECORD_REFERENCED = "RECORD_REFERENCED"
    SOURCE_REFUSED = "SOURCE_REFUSED"  # the source said no without a code of its own
    HOOK_FAILED = "HOOK_FAILED"  # a deployed hook threw or broke its contract: the write is refused
    HOOK_TIMEOUT = "HOOK_TIMEOUT"  # a deployed hook ran past its CPU budget: the write is refused
    # A hook refused in its own words but named no code of its own (the class default).
    HOOK_REJECTED = "HOOK_REJECTED"
    HOOK_CONTRACT_INVALID = "HOOK_CONTRACT_INVALID"  # a deployed hook's defineHook({...}) is wrong
    BATCH_INVALID = "BATCH_INVALID"  # the /v1/batch body is not {"reads": [...]}
    HELD_DELETE_NOT_PENDING = "HELD_DELETE_NOT_PENDING"  # that held delete was already decided
    WRITE_SETTLE_CONFLICT = (
        "write_settle_conflict"  # the seed spells this reason code in lower case
    )
    # Not refusals: the code on an allowed delete's trail row under an allow_with_audit rule, and
    # the reason code a write state carries while its source does not answer (it is retried).
    ALLOW_WITH_AUDIT = "ALLOW_WITH_AUDIT"
    TRANSIENT = "TRANSIENT"


class RecordError(StrEnum):
    """The top-level ``error`` of the records room's answers (the read's are ``ReadError``)."""

    RECORD_NOT_FOUND = "record_not_found"
    RECORD_TYPE_NOT_FOUND = "record_type_not_found"
    HELD_DELETE_NOT_FOUND = "held_delete_not_found"
    DELETE_WINDOW_FULL = "delete_window_full"
    INVALID_BATCH = "invalid_batch"
