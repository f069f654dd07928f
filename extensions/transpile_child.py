"""The compiler's child process: TypeScript's compiler in QuickJS, serving JSON lines.

Run by ``extensions.transpile`` (``child_process.ChildProcess``, ``python -I -B -c``), never imported
by a request path for its work: the compiler runs interpreted and ``eval_string`` holds the GIL for
the whole compile (a 90k-character file is ~4 s), so compiling in a web process stalled every
other request thread of it (``/v1/health`` waited 9 s). In this process it stalls nothing, and the
parent can stop a compile that runs past the deploy's time limit by killing the process.

Like ``sandbox_child`` it imports only the standard library, dukpy and ``child_confine``. The compiler's context
exports no Python function: it reads only the text it is handed and runs none of it. Protocol:
the child says ``{"ready": true}`` once the compiler is loaded (~1.5 s); then each request
``{"code": js, "variables": {...}}`` gets ``{"ok": value}`` or ``{"error": message}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import dukpy
from dukpy import _dukpy

from extensions.child_confine import child_confine

TYPESCRIPT_JS = Path(dukpy.__file__).resolve().parent / "jsmodules" / "typescriptServices.js"


class Compiler:
    """A QuickJS context holding the TypeScript compiler and nothing else."""

    def __init__(self) -> None:
        self._ctx = _dukpy.create_context()
        self.run(TYPESCRIPT_JS.read_text(encoding="utf-8"))

    def _check_exported_function_exists(self, name: bytes) -> bool:
        return False  # the compiler calls no Python

    def _normalize_module(self, base: str, name: str) -> str:
        raise ImportError(name)

    def run(self, code: str, **variables: Any) -> Any:
        raw = _dukpy.eval_string(
            self, code.encode("utf-8"), json.dumps(variables).encode("utf-8"), False, "<tsc>"
        )
        return None if raw is None else json.loads(raw)


def serve(reader: Any, writer: Any) -> None:
    """Answer requests until the parent closes the pipe."""
    compiler = Compiler()
    _send(writer, {"ready": True})
    while line := reader.readline():
        try:
            request = json.loads(line)
            reply = {"ok": compiler.run(request["code"], **request.get("variables", {}))}
        except _dukpy.JSRuntimeError as exc:  # e.g. nesting deep enough to overflow the parser
            reply = {"error": str(exc).partition("\n")[0]}
            compiler = Compiler()  # after a stack overflow or out of memory its heap is not trusted
        except (RecursionError, MemoryError, ValueError) as exc:
            reply = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        _send(writer, reply)


def _send(writer: Any, message: dict[str, Any]) -> None:
    writer.write(json.dumps(message).encode("utf-8") + b"\n")
    writer.flush()


def main(argv: list[str]) -> int:
    serve(sys.stdin.buffer, child_confine(argv))
    return 0
