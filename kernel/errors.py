"""The one family of domain exceptions. ``kernel.http`` is the one place that turns them into HTTP.

Every room raises subclasses of ``TurbobaseError``; views never build error bodies. This module
imports neither Django nor DRF, so the CLI and pure code may raise and catch these too. A refusal
(``Refusal``) always carries ``{code, field, message}`` and renders as
``{error, rejection: {code, field, message}}``; other errors render as ``{error, …extra}``.
"""

from __future__ import annotations

from typing import Any

from kernel.codes import KernelCode, KernelError
from kernel.text import CODE_MAX_CHARS, FIELD_MAX_CHARS, MESSAGE_MAX_CHARS, text_clean


class TurbobaseError(Exception):
    """Something went wrong."""

    error: str = KernelError.ERROR  # the top-level ``error`` of the HTTP body
    http_status: int = 400
    retryable: bool = False

    def __init__(self, message: str | None = None, **extra: Any) -> None:
        # Messages may carry an extension's or a source's text: bounded and storable, always.
        message = message or (self.__doc__ or self.error).strip()
        self.message = text_clean(message, MESSAGE_MAX_CHARS)
        self.extra = extra
        super().__init__(self.message)

    def body(self) -> dict[str, Any]:
        return {"error": self.error, "message": self.message, **self.extra}


class Refusal(TurbobaseError):
    """The write was refused."""

    error: str = KernelError.WRITE_REFUSED
    http_status = 422
    code: str = KernelCode.REFUSED

    def __init__(
        self,
        message: str | None = None,
        *,
        field: str | None = None,
        code: str | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message, **extra)
        if code:
            self.code = text_clean(code, CODE_MAX_CHARS)
        self.field = None if field is None else text_clean(field, FIELD_MAX_CHARS)

    def rejection(self) -> dict[str, Any]:
        return {"code": self.code, "field": self.field, "message": self.message}

    def body(self) -> dict[str, Any]:
        return {"error": self.error, "rejection": self.rejection(), **self.extra}


class NotFound(TurbobaseError):
    """Not found."""

    error: str = KernelError.NOT_FOUND
    http_status = 404

    def body(self) -> dict[str, Any]:
        return {"error": self.error, **self.extra}


class Conflict(Refusal):
    """The record changed underneath the write."""

    error: str = KernelError.CONFLICT
    http_status = 409


class Forbidden(TurbobaseError):
    """You may not do that."""

    error: str = KernelError.FORBIDDEN
    http_status = 403


class AdminRequired(Forbidden):
    """Only an administrator may do that."""

    error: str = KernelError.ADMIN_REQUIRED


class InvalidRequest(Refusal):
    """The request is not valid."""

    error: str = KernelError.INVALID_REQUEST
    http_status = 400
    code: str = KernelCode.INVALID
