"""TypeScript and modern JavaScript to the CommonJS the sandbox loads — pure Python, no Django.

Uses the TypeScript compiler dukpy bundles (``typescriptServices.js``, 5.7) inside a QuickJS
context of our own with no exported Python functions: the compiler reads only the source text
it is handed. Loading the compiler costs about 0.6 s, so one compiler serves the whole process,
behind a lock (a QuickJS context is single-threaded). Transpiling parses and rewrites the
author's text; it never runs it — running is the sandbox's job.
"""

from __future__ import annotations

import functools
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dukpy
from dukpy import _dukpy

TYPESCRIPT_JS = Path(dukpy.__file__).resolve().parent / "jsmodules" / "typescriptServices.js"
# An extension is a page of code. The compiler runs interpreted (about 40 us per character,
# holding the GIL: 100 kB is about 4 s) and its heap is QuickJS's 128 MiB, which a ~400 kB
# file exhausts; so the cap is an availability limit, not only a sanity check.
MAX_SOURCE_CHARS = 100_000

# QuickJS-ng runs ES2022 natively (class fields, optional chaining, async), so only the module
# syntax and the types are rewritten; the output keeps the author's code and line structure.
_TRANSPILE_JS = """(function (v) {
  const out = ts.transpileModule(v.source, {
    fileName: v.filename,
    reportDiagnostics: true,
    compilerOptions: {
      target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, sourceMap: true,
      esModuleInterop: true, isolatedModules: true, newLine: ts.NewLineKind.LineFeed,
    },
  });
  const starts = ts.computeLineStarts(v.source);
  const diagnostics = (out.diagnostics || [])
    .filter((d) => d.category === ts.DiagnosticCategory.Error)
    .map((d) => {
      const at = ts.computeLineAndCharacterOfPosition(starts, d.start || 0);
      return { line: at.line + 1, column: at.character + 1, code: d.code,
        message: ts.flattenDiagnosticMessageText(d.messageText, '\\n') };
    });
  return { code: out.outputText, map: out.sourceMapText, diagnostics };
})(dukpy)"""

_IMPORTS_JS = """(function (v) {
  const info = ts.preProcessFile(v.source, true, true);
  const starts = ts.computeLineStarts(v.source);
  return info.importedFiles.map((f) => {
    const at = ts.computeLineAndCharacterOfPosition(starts, f.pos);
    return { specifier: f.fileName, line: at.line + 1, column: at.character + 1 };
  });
})(dukpy)"""


@dataclass(frozen=True)
class Diagnostic:
    """One syntax error, at a 1-based position in the author's file."""

    file: str
    line: int
    column: int
    message: str
    ts_code: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"


class TranspileError(Exception):
    """The extension's source does not parse."""

    code = "extension_syntax_error"

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        self.message = "; ".join(str(d) for d in diagnostics[:5]) or (self.__doc__ or "")
        super().__init__(self.message)


@dataclass(frozen=True)
class TranspiledModule:
    """CommonJS code for the sandbox, with the source map back to the author's lines."""

    filename: str
    code: str
    source_map: str

    def original_position(self, line: int, column: int) -> tuple[int, int] | None:
        """Map a 1-based position in ``code`` to the 1-based position in the author's file."""
        return _lookup(_decode_mappings(self.source_map), line, column)


@dataclass(frozen=True)
class ImportSpecifier:
    """A module the source imports (``import``, ``export … from``, ``import()``, ``require``)."""

    specifier: str
    line: int
    column: int


def transpile(source: str, *, filename: str) -> TranspiledModule:
    """Compile one ES module (``.ts`` or ``.js``, chosen by ``filename``) to CommonJS.

    Raises ``TranspileError`` with every syntax error's line and column in the author's file.
    Type errors are not checked: that is the author's local ``tsc`` with the SDK's types.
    """
    if len(source) > MAX_SOURCE_CHARS:
        diagnostic = Diagnostic(
            filename, 1, 1, f"the file is over {MAX_SOURCE_CHARS} characters", 0
        )
        raise TranspileError([diagnostic])
    try:
        out = _run(_TRANSPILE_JS, source=source, filename=filename)
    except _dukpy.JSRuntimeError as exc:  # e.g. nesting deep enough to overflow the parser
        reason = str(exc).partition("\n")[0]
        message = f"the TypeScript compiler could not process this file ({reason})"
        raise TranspileError([Diagnostic(filename, 1, 1, message, 0)]) from None
    if out["diagnostics"]:
        raise TranspileError(
            [
                Diagnostic(
                    file=filename,
                    line=d["line"],
                    column=d["column"],
                    message=d["message"],
                    ts_code=d["code"],
                )
                for d in out["diagnostics"]
            ]
        )
    code = out["code"]
    marker = code.rfind("\n//# sourceMappingURL=")
    return TranspiledModule(
        filename=filename,
        code=code[: marker + 1] if marker >= 0 else code,
        source_map=out["map"] or "{}",
    )


def import_specifiers(source: str) -> list[ImportSpecifier]:
    """Every module specifier ``source`` imports, in order, for sibling folding to check."""
    found = _run(_IMPORTS_JS, source=source)
    return [ImportSpecifier(**item) for item in found]


def typescript_version() -> str:
    return str(_run("ts.version"))


class _Compiler:
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


_lock = threading.Lock()  # one compiler per process, and a QuickJS context is single-threaded
_compiler: _Compiler | None = None


def _run(code: str, **variables: Any) -> Any:
    global _compiler
    with _lock:
        if _compiler is None:
            _compiler = _Compiler()
        try:
            return _compiler.run(code, **variables)
        except _dukpy.JSRuntimeError:
            _compiler = None  # after a stack overflow or out-of-memory its heap is not trusted
            raise


_BASE64 = {
    c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
}


@functools.lru_cache(maxsize=64)
def _decode_mappings(source_map: str) -> tuple[tuple[tuple[int, int, int], ...], ...]:
    """Source map v3 ``mappings`` as, per generated line, ``(column, source line, source
    column)`` segments, all 0-based."""
    mappings = json.loads(source_map).get("mappings", "")
    lines: list[tuple[tuple[int, int, int], ...]] = []
    source_line = source_column = 0
    for text in mappings.split(";"):
        segments = []
        column = 0
        for segment in filter(None, text.split(",")):
            values = _vlq(segment)
            column += values[0]
            if len(values) >= 4:
                source_line += values[2]
                source_column += values[3]
                segments.append((column, source_line, source_column))
        lines.append(tuple(segments))
    return tuple(lines)


def _vlq(segment: str) -> list[int]:
    values: list[int] = []
    shift = value = 0
    for char in segment:
        digit = _BASE64[char]
        value += (digit & 31) << shift
        if digit & 32:
            shift += 5
            continue
        values.append(-(value >> 1) if value & 1 else value >> 1)
        shift = value = 0
    return values


def _lookup(
    lines: tuple[tuple[tuple[int, int, int], ...], ...], line: int, column: int
) -> tuple[int, int] | None:
    segments = lines[line - 1] if 0 < line <= len(lines) else ()
    if not segments:
        return None
    best = segments[0]
    for segment in segments:
        if segment[0] > column - 1:
            break
        best = segment
    return best[1] + 1, best[2] + 1
