"""Domain exceptions of the PostgREST-syntax read; ``kernel.errors`` renders them."""

from __future__ import annotations

from kernel.codes import KernelError
from kernel.errors import InvalidRequest, Refusal
from records.rest.codes import ReadCode, ReadError


class InvalidQuery(InvalidRequest):
    """The query is not valid PostgREST syntax for this resource."""

    error = ReadError.INVALID_QUERY
    code = ReadCode.INVALID_QUERY


class RpcNotSupported(InvalidRequest):
    """Stored procedures (``rpc/``) are never callable through the read."""

    error = ReadError.RPC_NOT_SUPPORTED
    code = ReadCode.RPC_NOT_SUPPORTED


class RestReadOnly(Refusal):
    """``/v1/rest`` is a read: it answers GET only. Write through ``/v1/data``."""

    error = ReadError.READ_ONLY
    http_status = 405
    code = ReadCode.READ_ONLY


class ResponseTooLarge(Refusal):
    """The result is larger than the read's byte ceiling; it is refused whole, never cut short."""

    error = ReadError.RESPONSE_TOO_LARGE
    http_status = 413
    code = ReadCode.READ_BYTE_CEILING


class ReadNotAuthenticated(Refusal):
    """A read runs as a signed-in user."""

    error = KernelError.NOT_AUTHENTICATED
    http_status = 401
    code = ReadCode.NOT_AUTHENTICATED
