"""Codes the extensions room answers with: deploy refusals and the sandbox's failures.

One enum; a code is never reused for another meaning. The values are what a deploy's rejection
and a step's refusal carry, so they keep their spelling (the sandbox's are lower case, and the
seed spells ``extension_id_mismatch`` in lower case). This module is stdlib only: the sandbox's
child processes import it, and send its members.
"""

from __future__ import annotations

from enum import StrEnum


class ExtensionCode(StrEnum):
    EXTENSION_INVALID = "EXTENSION_INVALID"
    EXTENSION_ID_MISMATCH = "extension_id_mismatch"
    IMPORT_REFUSED = "IMPORT_REFUSED"
    CONDUIT_NOT_SUPPORTED = "CONDUIT_NOT_SUPPORTED"
    EXTENSION_IN_USE = "EXTENSION_IN_USE"
    EXTENSION_SYNTAX_ERROR = "extension_syntax_error"
    # A file or the whole deploy is over a compile limit (characters, or compile time).
    EXTENSION_TOO_LARGE = "EXTENSION_TOO_LARGE"
    # A process's build, ctx.input or ctx.row does not fit the declarations (file:line:column).
    EXTENSION_TYPE_ERROR = "EXTENSION_TYPE_ERROR"
    PROJECT_FILE_INVALID = "PROJECT_FILE_INVALID"  # a project file cannot be read as UTF-8 text
    # The sandbox's own failures (a deploy's rejection carries the one that stopped it).
    SANDBOX_ERROR = "sandbox_error"
    SANDBOX_TIMEOUT = "sandbox_timeout"
    SANDBOX_TIME_BUDGET_EXCEEDED = "sandbox_time_budget_exceeded"  # CPU + ctx.query wall time
    SANDBOX_VALUE_TOO_DEEP = "sandbox_value_too_deep"
    SANDBOX_MEMORY_EXCEEDED = "sandbox_memory_exceeded"
    SANDBOX_STACK_OVERFLOW = "sandbox_stack_overflow"
    SANDBOX_SCRIPT_ERROR = "sandbox_script_error"
    SANDBOX_VIOLATION = "sandbox_violation"
    SANDBOX_PROMISE_UNSETTLED = "sandbox_promise_unsettled"
    SANDBOX_CRASHED = "sandbox_crashed"


class ExtensionError(StrEnum):
    """The top-level ``error`` of the extensions room's answers. Never reused."""

    INVALID_EXTENSION = "invalid_extension"
    EXTENSION_ID_MISMATCH = "extension_id_mismatch"
    EXTENSION_NOT_FOUND = "extension_not_found"
    EXTENSION_IN_USE = "extension_in_use"
