"""TypeScript and modern JavaScript to the CommonJS the sandbox loads — pure Python, no Django.

Uses the TypeScript compiler dukpy bundles (``typescriptServices.js``, 5.7) inside a QuickJS
context with no exported Python functions: the compiler reads only the source text it is handed.
Transpiling parses and rewrites the author's text; it never runs it — running is the sandbox's job.

Where it runs: in compiler child processes (``transpile_child``), never in the caller. The
compiler is interpreted and ``eval_string`` holds the GIL for a whole compile (about 40 us per
character: a 90k-character file is ~4 s), so compiling in a web process's request thread stalled
every other thread of it. Each process keeps up to ``MAX_COMPILERS`` warm children (loading the
compiler costs ~1.5 s; one idle for ``COMPILER_IDLE_S`` is ended) and hands one to a caller at a
time; the caller waits on a pipe, GIL free.

Limits, both refused by name (``CompileLimitExceeded``, naming the file and the limit):
- size: ``MAX_SOURCE_CHARS`` per file (the compiler's 128 MiB QuickJS heap is exhausted by a
  ~400 kB file), checked before anything is sent;
- time: a ``CompileBudget`` shared by every file of one deploy (``DEFAULT_COMPILE_MS``); past it
  the child doing the work is killed (a fresh one is started for the next caller).
"""

from __future__ import annotations

import functools
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from extensions.child_process import ChildExited, ChildOverrun, ChildProcess
from extensions.codes import ExtensionCode

MAX_SOURCE_CHARS = 100_000
DEFAULT_COMPILE_MS = 30_000
MAX_COMPILERS = 2  # warm compiler children per process
COMPILER_MEMORY_MB = 1_024  # the child's address space (QuickJS's heap is 128 MiB of it)
COMPILER_CPU_S = 3_600  # lifetime CPU of one compiler child; the next caller starts a new one
COMPILER_IDLE_S = 300.0  # an idle compiler child is ended after this long

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

    code = ExtensionCode.EXTENSION_SYNTAX_ERROR

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        self.message = "; ".join(str(d) for d in diagnostics[:5]) or (self.__doc__ or "")
        super().__init__(self.message)


class CompileLimitExceeded(TranspileError):
    """A file or a whole deploy is over a compile limit (size or time).

    ``field`` names what is too large (``files.<path>``, or ``files`` for the deploy's total) and
    ``limit`` the limit, e.g. ``{"maxChars": 100000}`` or ``{"compileMs": 30000}``.
    """

    code = ExtensionCode.EXTENSION_TOO_LARGE  # deploy answers it as ExtensionTooLarge

    def __init__(self, message: str, *, file: str | None, limit: dict[str, int]) -> None:
        super().__init__([Diagnostic(file or "files", 1, 1, message, 0)])
        self.message = message
        self.args = (message,)
        self.field = f"files.{file}" if file else "files"
        self.limit = limit


@dataclass
class CompileBudget:
    """The compile time one deploy may use, shared by all its files (and the wait for a
    compiler child, which is compile time the deploy spends too)."""

    limit_ms: int = DEFAULT_COMPILE_MS
    deadline: float = 0.0

    def __post_init__(self) -> None:
        if not self.deadline:
            self.deadline = time.monotonic() + self.limit_ms / 1000

    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()

    def exceeded(self, file: str | None) -> CompileLimitExceeded:
        where = f"{file} was not compiled" if file else "the files were not compiled"
        return CompileLimitExceeded(
            f"{where} within the deploy's compile time limit of {self.limit_ms} ms "
            f"(EXTENSIONS_DEPLOY_COMPILE_MS); split the extension or make the file smaller",
            file=file,
            limit={"compileMs": self.limit_ms},
        )


def source_size_check(source: str, *, filename: str) -> None:
    """Refuse a file over ``MAX_SOURCE_CHARS`` before any compiler sees it."""
    if len(source) > MAX_SOURCE_CHARS:
        raise CompileLimitExceeded(
            f"{filename} is {len(source)} characters, over the limit of {MAX_SOURCE_CHARS} "
            "characters per file",
            file=filename,
            limit={"maxChars": MAX_SOURCE_CHARS},
        )


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


def transpile(
    source: str, *, filename: str, budget: CompileBudget | None = None
) -> TranspiledModule:
    """Compile one ES module (``.ts`` or ``.js``, chosen by ``filename``) to CommonJS, in a
    compiler child, within ``budget`` (a fresh ``DEFAULT_COMPILE_MS`` when not given).

    Raises ``TranspileError`` with every syntax error's line and column in the author's file, or
    ``CompileLimitExceeded`` naming the file and the limit. Type errors are not checked: that is
    the author's local ``tsc`` with the SDK's types.
    """
    source_size_check(source, filename=filename)
    out = _run(_TRANSPILE_JS, budget or CompileBudget(), filename, source=source, filename=filename)
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


def import_specifiers(
    source: str, *, filename: str = "<source>", budget: CompileBudget | None = None
) -> list[ImportSpecifier]:
    """Every module specifier ``source`` imports, in order, for sibling folding to check."""
    source_size_check(source, filename=filename)
    found = _run(_IMPORTS_JS, budget or CompileBudget(), filename, source=source)
    return [ImportSpecifier(**item) for item in found]


def compiler_eval(code: str, *, budget: CompileBudget, file: str | None, **variables: Any) -> Any:
    """Evaluate ``code`` (a function of ``dukpy``'s ``variables``) in a compiler child, where
    ``ts`` is the compiler: for a caller with a compiler program of its own (the type check)."""
    return _run(code, budget, file, **variables)


def typescript_version() -> str:
    return str(_run("ts.version", CompileBudget(), None))


def compiles_in_flight() -> int:
    """How many compiles this process has handed to a child and not had back yet."""
    with _pool:
        return _in_flight


# The compiler children of this process: idle ones wait in ``_idle``; at most MAX_COMPILERS live.
_pool = threading.Condition()
_idle: list[tuple[float, ChildProcess]] = []  # (idle since, child), most recently used last
_live = 0
_in_flight = 0
_reaper: threading.Thread | None = None


def _run(code: str, budget: CompileBudget, file: str | None, **variables: Any) -> Any:
    """Evaluate ``code`` in a compiler child; the caller's thread only waits on a pipe."""
    global _in_flight
    child = _child_take(budget, file)
    is_healthy = False
    with _pool:
        _in_flight += 1
    try:
        reply = child.exchange(
            {"code": code, "variables": variables}, budget.remaining_s(), _no_bridge
        )
        is_healthy = True
    except ChildOverrun:
        raise budget.exceeded(file) from None
    except ChildExited as exited:
        message = f"the TypeScript compiler's process ended ({exited.args[0]}) on this file"
        raise TranspileError([Diagnostic(file or "<source>", 1, 1, message, 0)]) from None
    finally:
        with _pool:
            _in_flight -= 1
        _child_give_back(child, is_healthy=is_healthy)
    if "error" in reply:
        message = f"the TypeScript compiler could not process this file ({reply['error']})"
        raise TranspileError([Diagnostic(file or "<source>", 1, 1, message, 0)])
    return reply["ok"]


def _no_bridge(name: str, args: list[Any]) -> dict[str, Any]:
    return {"error": "the compiler calls no host function"}


def _child_take(budget: CompileBudget, filename: str | None) -> ChildProcess:
    global _live
    with _pool:
        while True:
            while _idle:
                _, child = _idle.pop()
                if child.is_usable():
                    return child
                child.close()  # forked from the process that started it, or it died
                _live -= 1
            if _live < MAX_COMPILERS:
                _live += 1
                break
            if budget.remaining_s() <= 0 or not _pool.wait(budget.remaining_s()):
                raise budget.exceeded(filename)
    try:  # started outside the lock: loading the compiler takes ~1.5 s
        return ChildProcess.spawn(
            memory_mb=COMPILER_MEMORY_MB,
            cpu_seconds=COMPILER_CPU_S,
            module="extensions.transpile_child",
        )
    except BaseException as exc:
        with _pool:
            _live -= 1
            _pool.notify()
        if isinstance(exc, ChildExited):
            message = f"the TypeScript compiler's process could not start ({exc.args[0]})"
            raise TranspileError([Diagnostic(filename or "<source>", 1, 1, message, 0)]) from None
        raise


def _child_give_back(child: ChildProcess, *, is_healthy: bool) -> None:
    global _live, _reaper
    if not is_healthy:
        child.close(is_forced=True)  # it may still be compiling: its next answer would be stale
    with _pool:
        if is_healthy:
            _idle.append((time.monotonic(), child))
            if _reaper is None:
                _reaper = threading.Thread(target=_reap_idle, name="compiler-reaper", daemon=True)
                _reaper.start()
        else:
            _live -= 1
        _pool.notify_all()


def _reap_idle() -> None:
    """End compiler children idle for ``COMPILER_IDLE_S``: each holds ~80 MB, and a web process
    deploys rarely. Runs while any child is idle; the next give-back starts it again."""
    global _live, _reaper
    while True:
        with _pool:
            if not _idle:
                _reaper = None
                return
            now = time.monotonic()
            expired = [item for item in _idle if now - item[0] >= COMPILER_IDLE_S]
            for item in expired:
                _idle.remove(item)
                _live -= 1
            if not expired:  # a give-back wakes this wait too (notify_all)
                _pool.wait(max(0.05, min(since for since, _ in _idle) + COMPILER_IDLE_S - now))
                continue
        for _, child in expired:
            child.close()


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
