"""The sandbox's public failures, one class per ``ExtensionCode``, and the child's reply made one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from extensions.codes import ExtensionCode


class ModuleSource(Protocol):
    """A compiled module, as ``extensions.transpile.TranspiledModule`` provides."""

    @property
    def filename(self) -> str: ...

    @property
    def code(self) -> str: ...

    def original_position(self, line: int, column: int) -> tuple[int, int] | None: ...


@dataclass(frozen=True)
class SourceLocation:
    """A 1-based position in the author's file."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class SandboxError(Exception):
    """The extension could not be run in the sandbox."""

    code = ExtensionCode.SANDBOX_ERROR
    is_retryable = False

    def __init__(self, message: str | None = None, location: SourceLocation | None = None) -> None:
        self.message = message or (self.__doc__ or "").strip()
        self.location = location
        super().__init__(self.message if location is None else f"{self.message} (at {location})")


class SandboxTimeout(SandboxError):
    """The extension ran past its CPU budget."""

    code = ExtensionCode.SANDBOX_TIMEOUT


class SandboxTimeBudgetExceeded(SandboxTimeout):
    """The call ran past its wall budget: CPU and host time answering ctx.query together."""

    code = ExtensionCode.SANDBOX_TIME_BUDGET_EXCEEDED


class SandboxValueTooDeep(SandboxError):
    """A value crossing the sandbox boundary is nested deeper than the sandbox allows."""

    code = ExtensionCode.SANDBOX_VALUE_TOO_DEEP


class SandboxMemoryExceeded(SandboxError):
    """The extension ran past its memory limit."""

    code = ExtensionCode.SANDBOX_MEMORY_EXCEEDED


class SandboxStackOverflow(SandboxError):
    """The extension recursed past the sandbox's stack limit."""

    code = ExtensionCode.SANDBOX_STACK_OVERFLOW


class SandboxScriptError(SandboxError):
    """The extension threw an error."""

    code = ExtensionCode.SANDBOX_SCRIPT_ERROR


class SandboxViolation(SandboxError):
    """The extension reached for something the sandbox does not give it."""

    code = ExtensionCode.SANDBOX_VIOLATION


class SandboxPromiseUnsettled(SandboxError):
    """The extension returned a Promise that can never settle."""

    code = ExtensionCode.SANDBOX_PROMISE_UNSETTLED


class SandboxCrashed(SandboxError):
    """The sandbox process ended unexpectedly."""

    code = ExtensionCode.SANDBOX_CRASHED
    is_retryable = True


SANDBOX_ERRORS: dict[str, type[SandboxError]] = {
    cls.code: cls
    for cls in (
        SandboxError,
        SandboxTimeout,
        SandboxTimeBudgetExceeded,
        SandboxValueTooDeep,
        SandboxMemoryExceeded,
        SandboxStackOverflow,
        SandboxScriptError,
        SandboxViolation,
        SandboxPromiseUnsettled,
        SandboxCrashed,
    )
}


def sandbox_error(error: Mapping[str, Any], sources: Mapping[str, ModuleSource]) -> SandboxError:
    """The exception for the child's ``{"code", "message", "location"}``, its location mapped
    back to the author's source through the module's source map when there is one."""
    location = None
    if error.get("location"):
        where = error["location"]
        line, column = where["line"], where["column"]
        source = sources.get(where["file"])
        mapped = source.original_position(line, column) if source is not None else None
        if mapped is not None:
            line, column = mapped
        location = SourceLocation(file=where["file"], line=line, column=column)
    return SANDBOX_ERRORS.get(error["code"], SandboxError)(error["message"], location)
