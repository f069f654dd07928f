"""The sandbox child's failures: ``Fault`` (code, message, location) and how a JavaScript
error becomes one. Stdlib and ``extensions.codes`` only: the child process loads it."""

from __future__ import annotations

import json
import re
from typing import Any

from extensions.codes import ExtensionCode
from extensions.value_depth import json_nests_within, nesting_exceeds, too_deep

# dukpy's QuickJS heap limit is fixed at 128 MiB per context; a larger result than this is a
# runaway, not a record payload, and would otherwise be copied three times on its way out.
MAX_RESULT_BYTES = 16 * 1024 * 1024
# The default export's JSON picture is drawn by recursion in JavaScript (runtime.js snapshot),
# whose stack holds ~200 levels; a definition is a page of object literals, far shallower.
MAX_DESCRIBE_DEPTH = 100
_FRAME = re.compile(r"at (?:\S+ \()?(?P<file>[^\s()]+):(?P<line>\d+):(?P<column>\d+)\)?")


class CpuBudgetExceeded(BaseException):
    """Raised by the SIGPROF handler; BaseException so no ``except Exception`` swallows it."""


class Fault(Exception):
    """A failure the parent maps onto one of the public ``Sandbox*`` exceptions by ``code``."""

    def __init__(self, code: str, message: str, location: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.location = location

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "location": self.location}


def json_loads_bounded(raw: bytes | str, what: str) -> Any:
    """``json.loads`` refusing, by name, a value nested past ``MAX_VALUE_DEPTH``."""
    try:
        value = json.loads(raw)
    except RecursionError:
        value, is_deep = None, True
    else:
        is_deep = not json_nests_within(raw) and nesting_exceeds(value)
    if is_deep:
        raise Fault(ExtensionCode.SANDBOX_VALUE_TOO_DEEP, too_deep(what))
    return value


def classify_text(text: str, offsets: dict[str, int]) -> Fault:
    """Classify dukpy's ``JSRuntimeError`` text: ``"Name: message"`` then QuickJS stack lines."""
    first, _, stack = text.partition("\n")
    name, separator, message = first.partition(": ")
    if not separator or not re.fullmatch(r"[A-Za-z]*Error", name):
        name, message = "Error", first
    return classify(name, message, stack, offsets)


def classify(name: str, message: str, stack: str, offsets: dict[str, int]) -> Fault:
    if name == "InternalError" and message == "out of memory":
        return Fault(
            ExtensionCode.SANDBOX_MEMORY_EXCEEDED, "the script exceeded the sandbox's memory limit"
        )
    if name == "InternalError" and message == "interrupted":
        return Fault(ExtensionCode.SANDBOX_TIMEOUT, "CPU budget exceeded")
    if "stack size exceeded" in message or (
        name == "InternalError" and message == "stack overflow"
    ):
        return Fault(ExtensionCode.SANDBOX_STACK_OVERFLOW, f"{name}: {message} (runaway recursion)")
    return Fault(ExtensionCode.SANDBOX_SCRIPT_ERROR, f"{name}: {message}", locate(stack, offsets))


def locate(stack: str, offsets: dict[str, int]) -> dict[str, Any] | None:
    """The first stack frame in an author module (not the SDK), as a 1-based position in the
    module's compiled code; the parent maps it back through the module's source map."""
    for match in _FRAME.finditer(stack):
        file = match["file"]
        if file in offsets and not file.startswith("@turbobase/"):
            line, column = int(match["line"]), int(match["column"])
            if line == 1:  # the register() wrapper shares the module's first line
                column = max(column - offsets[file], 1)
            return {"file": file, "line": line, "column": column}
    return None
