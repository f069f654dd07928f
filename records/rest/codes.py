"""Refusal codes of the PostgREST-syntax read. Codes are never reused.

Kept beside the read rather than in ``records.codes.RefusalCode`` (the write boundary's enum) so
the read can grow without touching the boundary's module; none of these names clash with it.
"""

from __future__ import annotations

from enum import StrEnum


class ReadCode(StrEnum):
    INVALID_QUERY = (
        "INVALID_QUERY"  # the class default of InvalidQuery; parser errors name their own
    )
    INVALID_PATH = "INVALID_PATH"
    RPC_NOT_SUPPORTED = "RPC_NOT_SUPPORTED"
    READ_ONLY = "READ_ONLY"
    UNKNOWN_COLUMN = "UNKNOWN_COLUMN"
    UNKNOWN_OPERATOR = "UNKNOWN_OPERATOR"
    OPERATOR_NOT_APPLICABLE = "OPERATOR_NOT_APPLICABLE"
    INVALID_VALUE = "INVALID_VALUE"
    INVALID_SELECT = "INVALID_SELECT"
    INVALID_ORDER = "INVALID_ORDER"
    INVALID_LIMIT = "INVALID_LIMIT"
    INVALID_OFFSET = "INVALID_OFFSET"
    DUPLICATE_PARAMETER = "DUPLICATE_PARAMETER"
    UNSUPPORTED_PARAMETER = "UNSUPPORTED_PARAMETER"
    READ_BYTE_CEILING = "READ_BYTE_CEILING"
    NOT_AUTHENTICATED = "NOT_AUTHENTICATED"


class ReadError(StrEnum):
    """The top-level ``error`` of a refused PostgREST-syntax read. Never reused."""

    INVALID_QUERY = "invalid_query"
    RPC_NOT_SUPPORTED = "rpc_not_supported"
    READ_ONLY = "read_only"
    RESPONSE_TOO_LARGE = "response_too_large"
