"""The QuickJS sandbox that runs extension code (hooks, processes) — pure Python, no Django.

What untrusted code may touch, and nothing more:
- the ECMAScript built-ins of a fresh QuickJS context (no ``process``, no environment, no file
  system, no network, no timers: ``fetch``, ``XMLHttpRequest``, ``setTimeout``… exist only to
  fail with ``SandboxViolation``);
- ``require`` of ``@turbobase/extensions``, ``@turbobase/extensions/process`` and the sibling
  modules the caller folded in — any other specifier, or a path escaping the extension's
  directory, is a ``SandboxViolation``; ``import()`` is refused the same way;
- the Python functions named in ``bridge`` (``ctx.query`` and ``ctx.log`` for the SDK) and no
  other: dukpy re-installs ``call_python`` on every eval, so the allow-list of exported names,
  checked in the child, is the boundary; naming anything else is a ``SandboxViolation`` even if
  the script catches the error it gets;
- JSON values in, JSON values out.

How it is enforced (chosen after trying the alternatives on dukpy 0.6.0 / QuickJS-ng):
- Author code runs in a long-lived child process (``sandbox_child.py``, stdlib + dukpy only,
  empty environment, ``python -I``), one per ``Sandbox``, which serves a whole slice. The parent
  talks JSON lines over pipes, so it works from any thread of a web server or a worker, and a
  ``ctx.query`` is a request from the child that the parent answers in the calling thread.
- CPU budget: an ``ITIMER_PROF`` timer in the child's main thread. dukpy's QuickJS interrupt
  handler calls ``PyErr_CheckSignals()``, so the SIGPROF handler's exception stops a running
  loop or a catastrophic regex, uncatchably, and the child stays healthy. The parent also holds
  a wall-clock deadline (3x the budget + 2 s, not counting time spent answering the bridge) and
  kills and respawns the child past it; ``RLIMIT_CPU`` is the last backstop. The per-slice
  budget is the sum of the CPU the child reports per call, checked before each call. Time the
  host spends answering ``ctx.query`` is not the script's CPU, so each call also has a wall
  budget (``wall_budget_ms``: CPU and bridge time together, as the wall clock sees them): past
  it the next bridge answer aborts the call (``SandboxTimeBudgetExceeded``, uncatchable like a
  violation), and ``wall_remaining_ms()`` lets the bridge bound a read to what is left.
- Memory: dukpy fixes each QuickJS context's heap at 128 MiB (``JS_SetMemoryLimit`` in
  ``create_context``, not reachable from Python); a script over it gets ``out of memory``,
  reported as ``SandboxMemoryExceeded``. ``RLIMIT_AS`` on the child covers the Python side.
  Runaway recursion hits QuickJS's 1 MiB stack limit: ``SandboxStackOverflow``.
- State: nothing one call leaves behind is seen by the next (seed 000: steps share state only
  through ``ctx``), for ~0.1 ms more of the child's CPU a call (~230 us against ~130 us with
  one shared scope, measured on a busy 2-core machine) where a new context per call, with its
  modules evaluated and the lock-down done again, costs ~5 ms (``bench/sandbox.py``). One
  QuickJS context serves the whole slice; its built-ins are frozen before any author code runs
  (``runtime.js`` ``lockDown``: no prototype can be polluted; ``this.name = …`` on one's own
  objects still works), and every call starts in a fresh scope: the modules instantiated
  again from their factories (fresh module variables), every global an earlier call added
  deleted. What a fresh scope cannot undo (a
  global that cannot be deleted, a frozen global object) replaces the context before the next
  call. ``eval`` (indirect eval declares global ``let`` bindings no one can delete) and
  ``FinalizationRegistry`` (a callback would run in a later call) are refused like timers.
- Clock: ``Date.now()`` only. QuickJS-ng's ``performance`` reads the host's monotonic clock
  (``timeOrigin`` was the host's uptime); the sandbox's is ``Date.now()`` from the realm's start.
- Values: JSON only, nested at most ``MAX_VALUE_DEPTH`` (512) deep in either direction, refused
  by name (``SandboxValueTooDeep``) — before sending, or in the child, which answers rather
  than dying with a traceback on the host's stderr.

Rejected:
- ``dukpy.JSInterpreter``: it publishes ``os.environ`` as ``process.env``, exports
  ``dukpy.load_module`` (reads any host file) and installs a Node-like ``require``.
- SIGALRM / ``ITIMER_REAL``: django-q2 uses SIGALRM for its own task timeouts.
- A CPU timer in the calling process: Python runs signal handlers only in the main thread
  (a timer armed from another thread interrupted the main thread instead), and ``eval_string``
  holds the GIL for the whole script (a 1 s loop starved every other thread), so author code in
  a request thread would stall the server and could not be stopped.
- A thread with a timeout: a Python thread cannot be killed, and it would hold the GIL.
- A fresh process or a fresh context per call: ~10x a call in a fresh scope
  (``bench/sandbox.py``), too slow for a chain step meant to cost ~1 ms with its transaction.
- Isolation checked at the start of the next call (how the fresh-scope check first worked):
  dukpy writes ``dukpy`` (the eval's variables: the next call's ctx) and ``call_python`` onto
  the global object before any of our code runs, so a global frozen, sealed or made
  non-extensible by one user's call failed every later call (HOOK_FAILED for everyone), and an
  accessor planted there was handed the next user's ctx. The check now has the last word in
  every eval that ran author code (runtime.js ``lastWord``), and a realm it cannot clear is
  replaced before the next call.
- The check at the end of the called function: promise jobs (``then``, ``await``,
  ``queueMicrotask``) run after it returns, when dukpy drains the job queue, and dukpy calls a
  result's ``toJSON`` after that. So the check runs from the eval result's own ``toJSON``, and
  the author's value is copied to plain JSON when it settles, in the author's turn.
- Freezing the global object up front: dukpy's two writes fail on a non-extensible global, and
  author code may assign globals of its own within a call.
- Repairing a tainted global in place: freeze, seal and preventExtensions cannot be undone,
  nor a non-configurable property deleted; a new realm (~20-40 ms) is the only way back.
- One eval per row in ``call_each``, so that each row's promise jobs run before the next row:
  ~200 us of child CPU a row against ~60 us with every row in one eval (``call_each`` of 200
  builds, measured here), which would take an ``eachRow`` migration under 3,000 rows/s. In one
  eval the jobs of every row run together after the last row, so runtime.js keeps them from
  any other row instead: a later row that awaits is dropped (run alone), a row's bridge closes
  when the next row starts (a job that uses it drops its row, run alone), and once several
  rows ran every bridge closes and the global is cleared before the jobs run.
- Freezing nothing and restoring the built-ins after each call: ~1,000 objects and ~2,700
  properties to compare per call; freezing them once costs ~20 ms per context. (dukpy collects
  garbage after every eval, so each object the context keeps alive costs every call: the
  lock-down keeps its own bookkeeping out of the heap, and only the prototypes ordinary code
  overrides on get the override accessors.)
"""

from __future__ import annotations

import json
import logging
import math
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Self

from extensions.codes import ExtensionCode
from extensions.sandbox_child import (
    SPAWN_TIMEOUT_S,
    ChildExited,
    ChildOverrun,
    ChildProcess,
    json_nests_within,
    nesting_exceeds,
    too_deep,
)
from kernel.metrics import SANDBOX_CALL_SECONDS
from kernel.text import LOG_LINE_MAX_CHARS, LOG_LINES_PER_CALL, text_clean

WALL_FACTOR = 3.0
WALL_GRACE_S = 2.0
# Calls that may be ahead at once (``call_ahead``): the next step's and the one after it, so
# the child has the step after next to build while the caller takes the next one.
AHEAD_MAX = 2
logger = logging.getLogger("turbobase.extensions.sandbox")


@dataclass(frozen=True)
class SandboxLimits:
    """The budgets one sandbox runs under."""

    call_budget_ms: int = 1_000  # CPU per call (and for loading the modules)
    slice_budget_ms: int = 30_000  # CPU across every call of one Sandbox
    memory_mb: int = 512  # address space of the child process (QuickJS's heap is 128 MiB)
    # Wall time of one call: its CPU and the time the host spends answering ctx.query / ctx.log
    # together. The CPU budget cannot see a loop of reads; past this the call is stopped
    # (SandboxTimeBudgetExceeded), and a bridge function can bound its own work by
    # ``Sandbox.wall_remaining_ms()``.
    wall_budget_ms: int = 30_000


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


_ERRORS: dict[str, type[SandboxError]] = {
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


class BridgeError(Exception):
    """Raised by a bridge function to fail the JavaScript call with this message (``ctx.query``
    rejects with it). Any other exception reaches the script as a bare "ctx.<name> failed", so
    host details do not leak into author code; exceptions carrying a ``code`` (the domain
    errors) are passed through like this one."""


class ModuleSource(Protocol):
    """A compiled module, as ``extensions.transpile.TranspiledModule`` provides."""

    @property
    def filename(self) -> str: ...

    @property
    def code(self) -> str: ...

    def original_position(self, line: int, column: int) -> tuple[int, int] | None: ...


@dataclass(frozen=True)
class LoadedModule:
    """What the default export is: ``kind`` from the SDK (``process``, ``hook``, ``conduit``,
    or None when ``define*`` was not used) and its JSON picture, functions shown as
    ``{"$fn": true, "async": bool}``, cycles as ``{"$cycle": true}``."""

    kind: str | None
    definition: Any


def _log(*parts: Any) -> None:
    line = " ".join(p if isinstance(p, str) else json.dumps(p) for p in parts)
    # An extension's words reach the server's or worker's log: bounded, and safe to encode.
    logger.info(text_clean(line, LOG_LINE_MAX_CHARS))


Bridge = Mapping[str, Callable[..., Any]]
Path_ = Sequence[str | int]


class Sandbox:
    """One child interpreter for one slice (or one hook call): load once, call many times.

    Not shared between threads: one caller drives it at a time. Create it after forking.
    """

    def __init__(
        self, *, bridge: Bridge | None = None, limits: SandboxLimits | None = None
    ) -> None:
        self.limits = limits or SandboxLimits()
        self._bridge: dict[str, Callable[..., Any]] = {}
        self._set_bridge(bridge)
        self._modules: dict[str, str] = {}
        self._sources: dict[str, ModuleSource] = {}
        self._entry: str | None = None
        self._child: ChildProcess | None = None
        self._cpu_used_ms = 0.0
        self._call_started = 0.0
        self._log_lines = 0  # ctx.log lines written by the call in hand (LOG_LINES_PER_CALL)
        self._wall_scale = (
            1  # calls in the exchange in hand (call_each): the wall budget's multiple
        )
        self._lock = threading.Lock()
        # Calls sent ahead whose replies are not read yet, in the order the child answers them.
        self._ahead: list[_Ahead] = []

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """End the child process. The sandbox respawns one if it is used again."""
        self._ahead = []
        if self._child is not None:
            self._child.close()
            self._child = None

    @property
    def cpu_used_ms(self) -> float:
        """CPU spent so far against the slice budget."""
        return self._cpu_used_ms

    def load(
        self,
        entry: str | ModuleSource,
        *,
        siblings: Mapping[str, str | ModuleSource] | None = None,
        filename: str = "index.js",
    ) -> LoadedModule:
        """Evaluate the entry module (CommonJS, as ``transpile`` emits) with its folded siblings,
        keyed by their path inside the extension's directory, and describe its default export."""
        entry_id = _module_id(filename if isinstance(entry, str) else entry.filename)
        modules: dict[str, str | ModuleSource] = {entry_id: entry}
        for path, source in (siblings or {}).items():
            if _module_id(path) in modules:
                raise ValueError(f"sibling {path!r} is the entry module or given twice")
            modules[_module_id(path)] = source
        self._entry = entry_id
        self._modules = {key: s if isinstance(s, str) else s.code for key, s in modules.items()}
        self._sources = {key: s for key, s in modules.items() if not isinstance(s, str)}
        if self._child is not None:
            self._child.has_modules = False
        loaded = self._request({"op": "load"}, budget_ms=None)
        return LoadedModule(kind=loaded["kind"], definition=loaded.get("value"))

    def describe(self, path: Path_ = ()) -> Any:
        """The JSON picture of the default export, or of the value at ``path`` inside it."""
        return self._request({"op": "describe", "path": list(path)}, budget_ms=None)

    def call(
        self,
        path: Path_,
        args: Sequence[Any] = (),
        *,
        ctx: Mapping[str, Any] | None = None,
        budget_ms: int | None = None,
    ) -> Any:
        """Call the function at ``path`` in the default export (``["steps", 0, "build"]``) and
        return its JSON result, awaiting a Promise. With ``ctx``, the function gets it first,
        with the bridge functions added (``ctx.query`` answers a Promise, ``ctx.log`` nothing).

        Every call starts in a fresh scope: the modules instantiated again, nothing an earlier
        call left on the global object or the (frozen) built-ins. ``ctx`` and ``args`` nested
        more than ``sandbox_child.MAX_VALUE_DEPTH`` (512) deep are refused (``SandboxValueTooDeep``), as is a result
        that deep."""
        message = _call_message(path, args, ctx)
        # Encoded once: the key compared with a call sent ahead, and the request sent otherwise.
        encoded = _encoded(message)
        ahead = self._ahead_of(encoded, budget_ms)
        # (a call sent ahead was checked when it was sent)
        if ahead is None and (deep := _too_deep_in(ctx, args, encoded)) is not None:
            raise SandboxValueTooDeep(too_deep(deep))
        return self._request(message, budget_ms=budget_ms, ahead=ahead, encoded=encoded)

    def call_ahead(
        self,
        path: Path_,
        args: Sequence[Any] = (),
        *,
        ctx: Mapping[str, Any] | None = None,
        budget_ms: int | None = None,
    ) -> bool:
        """Start ``call(path, args, ctx=ctx)`` and return at once: the child computes while the
        caller does other work (a process step commits while the next step's ``build`` runs).
        Up to ``AHEAD_MAX`` calls may be ahead; the child answers them in the order sent. The
        next ``call`` takes the first one's reply if it is the same call (path, args, ctx and
        budget); any other request first reads every reply ahead and drops them. The call is
        the same call, under the same budgets (its wall clock runs from when its reply is
        awaited); a ``ctx.query`` it makes is answered only then, so it reads what the caller
        committed in between. Best effort: when it cannot start (a call in hand, ``AHEAD_MAX``
        already ahead, a value too deep or not JSON), nothing is sent and the later ``call``
        runs as usual. Answers whether it was sent."""
        if self._entry is None or len(self._ahead) >= AHEAD_MAX:
            return False
        encoded = _encoded(_call_message(path, args, ctx))
        if encoded is None:  # not JSON (or too deep for the encoder): the call itself says so
            return False
        if _too_deep_in(ctx, args, encoded) is not None:
            return False
        if not self._lock.acquire(blocking=False):
            return False
        try:
            budget = self._budget(budget_ms)
            child = self._ready_child()
            # The request is the message with its budget: one encoding serves as the key too.
            child.send_encoded(_budgeted(encoded, budget))
            self._ahead.append(_Ahead(_ahead_key(encoded, budget_ms), budget))
            return True
        except (TypeError, ValueError):  # not JSON: the call itself says so
            return False
        except ChildExited:
            self._discard_child()
            return False
        except SandboxError:  # no budget left, or the modules did not load: the call says so
            return False
        finally:
            self._lock.release()

    def call_each(self, path: Path_, ctxs: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Call the function at ``path`` once per ``ctx`` in one exchange (a slice's row builds),
        each in a fresh scope as ``call``. Answers the values of the leading calls that settled
        at once; the list stops before the first that failed or awaited a Promise — the caller
        makes that call (and the rest) with ``call``. It also stops before a call whose promise
        job used its ``ctx`` bridge after the next call had started (the batch's jobs run
        together after its last call, so a call's bridge closes when its turn ends): that call,
        too, is made alone. The budgets (CPU, wall) are one call's times the number of ctxs; a
        batch that overruns them raises, as ``call`` does."""
        if not ctxs:
            return []
        for index, ctx in enumerate(ctxs):
            if nesting_exceeds(ctx):
                raise SandboxValueTooDeep(too_deep(f"ctxs[{index}]"))
        message = {"op": "call_each", "path": list(path), "ctxs": [dict(c) for c in ctxs]}
        self._wall_scale = len(ctxs)
        try:
            values = self._request(message, budget_ms=self.limits.call_budget_ms * len(ctxs))
        finally:
            self._wall_scale = 1
        return list(values)

    def slice_start(self) -> None:
        """A new slice on this interpreter: the per-slice CPU budget starts again."""
        self._cpu_used_ms = 0.0

    def new_run(self, *, bridge: Bridge | None = None) -> None:
        """Start the next run, optionally with other bridge functions (the next invoking user's
        ``ctx.query``). Every call already starts in a fresh scope; other bridge *names* also
        mean a new QuickJS context (they are built into it). The slice budget carries on."""
        if bridge is not None:
            self._set_bridge(bridge)
        if self._child is not None and self._child.has_modules:
            self._request(
                {"op": "new_run", "bridge": sorted(self._bridge)}, budget_ms=None, is_budgeted=False
            )

    def _set_bridge(self, bridge: Bridge | None) -> None:
        functions: dict[str, Callable[..., Any]] = {"log": self._log_counted, **(bridge or {})}
        for name in functions:
            if not name.isidentifier() or name.startswith("_"):
                raise ValueError(f"bridge function name {name!r} is not a plain identifier")
        self._bridge = functions

    def _log_counted(self, *parts: Any) -> None:
        """``ctx.log``: at most ``LOG_LINES_PER_CALL`` lines per call, then one line saying so."""
        self._log_lines += 1
        allowed = LOG_LINES_PER_CALL * self._wall_scale
        if self._log_lines <= allowed:
            _log(*parts)
        elif self._log_lines == allowed + 1:
            logger.info(
                "… [ctx.log: more than %d lines in one call; the rest of this call's "
                "lines are dropped]",
                LOG_LINES_PER_CALL,
            )

    def _request(
        self,
        message: dict[str, Any],
        *,
        budget_ms: int | None,
        is_budgeted: bool = True,
        ahead: _Ahead | None = None,
        encoded: str | None = None,
    ) -> Any:
        if self._entry is None:
            raise SandboxError("no module is loaded in this sandbox")
        if not self._lock.acquire(blocking=False):
            raise SandboxError("the sandbox is already running a call (one caller at a time)")
        started, outcome = None, "error"  # for /metrics: the call's duration by its outcome
        try:
            ahead = self._ahead_settle(ahead)
            budget = ahead.budget if ahead else (self._budget(budget_ms) if is_budgeted else 0)
            if is_budgeted:
                message["budget_ms"] = budget
            deadline_s = budget / 1000 * WALL_FACTOR + WALL_GRACE_S
            self._call_started = started = time.monotonic()
            self._log_lines = 0
            try:
                if ahead is not None and self._child is not None:
                    reply = self._child.receive(deadline_s, self._answer)
                elif encoded is not None and is_budgeted:  # the message, encoded by the caller
                    child = self._ready_child()
                    child.send_encoded(_budgeted(encoded, budget))
                    reply = child.receive(deadline_s, self._answer)
                else:
                    reply = self._ready_child().exchange(message, deadline_s, self._answer)
            except ChildOverrun:
                self._discard_child()
                self._cpu_used_ms += budget
                raise SandboxTimeout(
                    f"CPU budget of {budget} ms exceeded (the sandbox process was stopped)"
                ) from None
            except ChildExited as exited:
                self._discard_child()
                if exited.args[0] == -signal.SIGXCPU:
                    raise SandboxTimeout("the sandbox process ran out of CPU time") from None
                raise SandboxCrashed(f"the sandbox process exited ({exited.args[0]})") from None
            self._cpu_used_ms += reply.get("cpu_ms", 0.0)
            if "error" in reply:
                raise self._error(reply["error"])
            outcome = "ok"
            return reply["ok"]
        finally:
            self._lock.release()
            if started is not None:
                SANDBOX_CALL_SECONDS.labels(outcome=outcome).observe(time.monotonic() - started)

    def _ahead_of(self, encoded: str | None, budget_ms: int | None) -> _Ahead | None:
        """The first call sent ahead if ``encoded`` (a call's message, ``_encoded``) is that
        call, else None (only the first one's reply is next in the pipe)."""
        if not self._ahead or encoded is None:
            return None
        first = self._ahead[0]
        return first if _ahead_key(encoded, budget_ms) == first.key else None

    def _ahead_settle(self, taken: _Ahead | None) -> _Ahead | None:
        """``taken`` if it is the first call sent ahead (its reply is next in the pipe; the
        others stay ahead); else every call ahead has its reply read and dropped (its
        ``ctx.query`` refused) so the pipe is clear."""
        if taken is not None and self._ahead and self._ahead[0] is taken:
            del self._ahead[0]
            return taken
        ahead, self._ahead = self._ahead, []
        for dropped in ahead:
            if self._child is None:
                break
            try:
                reply = self._child.receive(
                    dropped.budget / 1000 * WALL_FACTOR + WALL_GRACE_S, _ahead_dropped
                )
                self._cpu_used_ms += reply.get("cpu_ms", 0.0)
            except ChildOverrun:
                self._discard_child()
                self._cpu_used_ms += dropped.budget
            except ChildExited:
                self._discard_child()
        return None

    def _budget(self, budget_ms: int | None) -> int:
        remaining = self.limits.slice_budget_ms - self._cpu_used_ms
        if remaining < 1:
            raise SandboxTimeout(
                f"the slice's CPU budget of {self.limits.slice_budget_ms} ms is spent"
            )
        return max(1, math.floor(min(budget_ms or self.limits.call_budget_ms, remaining)))

    def _ready_child(self) -> ChildProcess:
        if self._child is not None and not self._child.is_usable():
            self._discard_child()
        if self._child is None:
            cpu_seconds = math.ceil(self.limits.slice_budget_ms / 1000) + 10
            self._child = ChildProcess.spawn(
                memory_mb=self.limits.memory_mb, cpu_seconds=cpu_seconds
            )
        if not self._child.has_modules:
            modules_message = {
                "op": "modules",
                "modules": self._modules,
                "entry": self._entry,
                "bridge": sorted(self._bridge),
            }
            reply = self._child.exchange(modules_message, SPAWN_TIMEOUT_S, self._answer)
            if "error" in reply:
                raise self._error(reply["error"])
            self._child.has_modules = True
        return self._child

    def _discard_child(self) -> None:
        self._ahead = []  # their replies died with the child
        if self._child is not None:
            self._child.close(is_forced=True)
            self._child = None

    def _error(self, error: Mapping[str, Any]) -> SandboxError:
        location = None
        if error.get("location"):
            where = error["location"]
            line, column = where["line"], where["column"]
            source = self._sources.get(where["file"])
            mapped = source.original_position(line, column) if source is not None else None
            if mapped is not None:
                line, column = mapped
            location = SourceLocation(file=where["file"], line=line, column=column)
        return _ERRORS.get(error["code"], SandboxError)(error["message"], location)

    def wall_remaining_ms(self) -> float:
        """What is left of the running call's wall budget (for a bridge function to bound its
        own work, e.g. a read's statement timeout); the full budget outside a call."""
        if not self._lock.locked():
            return float(self.limits.wall_budget_ms)
        spent_ms = (time.monotonic() - self._call_started) * 1000
        return self.limits.wall_budget_ms * self._wall_scale - spent_ms

    def _over_wall_budget(self) -> dict[str, Any] | None:
        if self.wall_remaining_ms() > 0:
            return None
        message = (
            f"the call's wall budget of {self.limits.wall_budget_ms} ms (its CPU and the host "
            "time answering ctx.query together) is spent"
        )
        return {"abort": {"code": SandboxTimeBudgetExceeded.code, "message": message}}

    def _answer(self, name: str, args: list[Any]) -> dict[str, Any]:
        """Run a bridge function for the child. Only names in the bridge reach here: the child
        refuses the rest before asking. Past the wall budget, before or after the function,
        the call is aborted: the child fails it whatever the script does with the error."""
        function = self._bridge.get(name)
        if function is None:
            return {"error": f"ctx.{name} is not available"}
        if (over := self._over_wall_budget()) is not None:
            return over
        try:
            value = function(*args)
        except Exception as exc:
            if (over := self._over_wall_budget()) is not None:
                return over
            if isinstance(exc, BridgeError) or hasattr(exc, "code"):
                return {"error": str(exc)}
            logger.exception("sandbox bridge function %s failed", name)
            return {"error": f"ctx.{name} failed"}
        if (over := self._over_wall_budget()) is not None:
            return over
        try:
            encoded = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            return {"error": f"ctx.{name} answered a value that is not JSON"}
        except RecursionError:
            return {"error": too_deep(f"the value ctx.{name} answered")}
        if not json_nests_within(encoded) and nesting_exceeds(value):
            return {"error": too_deep(f"the value ctx.{name} answered")}
        return {"ok": value}


def _call_message(
    path: Path_, args: Sequence[Any], ctx: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The request of a call (its budget is added when it is sent)."""
    return {
        "op": "call",
        "path": list(path),
        "args": list(args),
        "ctx": None if ctx is None else dict(ctx),
    }


def _encoded(message: dict[str, Any]) -> str | None:
    """``message`` as JSON, or None when it is not JSON (or too deep for the encoder): then it is
    not sent encoded, and the call refuses it as it always did (too deep, or not JSON on
    sending). The encoder does not look for cycles: a cycle recurses until ``RecursionError``,
    which is None here and too deep for the depth check."""
    try:
        return json.dumps(message, allow_nan=False, check_circular=False)
    except (TypeError, ValueError, RecursionError):
        return None


def _budgeted(encoded: str, budget: int) -> str:
    """The request of the call ``encoded`` (a JSON object) with its CPU budget added last, as
    ``json.dumps`` would write the message with ``budget_ms`` set."""
    return f'{encoded[:-1]}, "budget_ms": {budget}}}'


def _too_deep_in(
    ctx: Mapping[str, Any] | None, args: Sequence[Any], encoded: str | None = None
) -> str | None:
    """What of a call's ctx and args is nested past ``MAX_VALUE_DEPTH`` (its name), or None.
    ``encoded``, the call's message as JSON, spares the walk when it has too few brackets for
    any part of it to nest that deep (``json_nests_within``)."""
    if encoded is not None and json_nests_within(encoded):
        return None
    if ctx is not None and nesting_exceeds(ctx):
        return "ctx"
    for index, arg in enumerate(args):
        if nesting_exceeds(arg):
            return f"args[{index}]"
    return None


@dataclass(frozen=True)
class _Ahead:
    """A call sent ahead (``Sandbox.call_ahead``): what it was, and the CPU budget it runs under."""

    key: str
    budget: int


def _ahead_key(encoded: str, budget_ms: int | None) -> str:
    """What makes two calls the same call: the request as the child receives it (JSON: ``1``
    and ``true`` differ) — the function, its arguments, its ctx — and the budget asked for."""
    return f"{budget_ms}:{encoded}"


def _ahead_dropped(name: str, args: list[Any]) -> dict[str, Any]:
    """The bridge of a call sent ahead and then not taken: its result is dropped, so its reads
    are not run; the child ends the call at once."""
    return {"abort": {"code": "sandbox_error", "message": "the call was not needed"}}


def _module_id(path: str) -> str:
    parts = [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]
    if not parts or ".." in parts or path.startswith(("/", "@")):
        raise ValueError(f"module path {path!r} must be relative to the extension's directory")
    return "/".join(parts)
