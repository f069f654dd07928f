"""The QuickJS sandbox that runs extension code (hooks, processes) — pure Python, no Django.

What author code may touch, how each limit is enforced and the designs tried and rejected:
docs/sandbox.md. The child process is ``sandbox_child``; this is the parent's end of it.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

from extensions.child_process import SPAWN_TIMEOUT_S, ChildExited, ChildOverrun, ChildProcess
from extensions.sandbox_ahead import (
    AHEAD_MAX,
    WALL_FACTOR,
    WALL_GRACE_S,
    AheadCalls,
    SandboxLimits,
)
from extensions.sandbox_bridge import Bridge, BridgeError, BridgeHost
from extensions.sandbox_errors import (
    SANDBOX_ERRORS,
    ModuleSource,
    SandboxCrashed,
    SandboxError,
    SandboxMemoryExceeded,
    SandboxPromiseUnsettled,
    SandboxScriptError,
    SandboxStackOverflow,
    SandboxTimeBudgetExceeded,
    SandboxTimeout,
    SandboxValueTooDeep,
    SandboxViolation,
    SourceLocation,
    sandbox_error,
)
from extensions.sandbox_messages import (
    Ahead,
    EachAhead,
    Path_,
    budgeted,
    call_message,
    each_message,
    message_encoded,
    module_id,
    too_deep_in,
)
from extensions.value_depth import MAX_VALUE_DEPTH, json_nests_within, nesting_exceeds, too_deep
from kernel.metrics import SANDBOX_CALL_SECONDS

# The public names callers import from here, wherever they are defined.
__all__ = [
    "AHEAD_MAX",
    "MAX_VALUE_DEPTH",
    "SANDBOX_ERRORS",
    "Bridge",
    "BridgeError",
    "LoadedModule",
    "ModuleSource",
    "Sandbox",
    "SandboxCrashed",
    "SandboxError",
    "SandboxLimits",
    "SandboxMemoryExceeded",
    "SandboxPromiseUnsettled",
    "SandboxScriptError",
    "SandboxStackOverflow",
    "SandboxTimeBudgetExceeded",
    "SandboxTimeout",
    "SandboxValueTooDeep",
    "SandboxViolation",
    "SourceLocation",
]


@dataclass(frozen=True)
class LoadedModule:
    """What the default export is: ``kind`` from the SDK (``process``, ``hook``, ``conduit``,
    or None when ``define*`` was not used) and its JSON picture, functions shown as
    ``{"$fn": true, "async": bool}``, cycles as ``{"$cycle": true}``."""

    kind: str | None
    definition: Any


class Sandbox(AheadCalls):
    """One child interpreter for one slice (or one hook call): load once, call many times.

    Not shared between threads: one caller drives it at a time. Create it after forking.
    """

    def __init__(
        self, *, bridge: Bridge | None = None, limits: SandboxLimits | None = None
    ) -> None:
        self.limits = limits or SandboxLimits()
        self._lock = threading.Lock()
        self._host = BridgeHost(wall_budget_ms=self.limits.wall_budget_ms, in_call=self._lock)
        self._host.set(bridge)
        self._modules: dict[str, str] = {}
        self._sources: dict[str, ModuleSource] = {}
        self._entry: str | None = None
        self._child: ChildProcess | None = None
        self._cpu_used_ms = 0.0
        # Calls sent ahead whose replies are not read yet, in the order the child answers them.
        self._ahead: list[Ahead] = []
        self._each: EachAhead | None = None  # the call_each_ahead whose parts are being taken

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """End the child process. The sandbox respawns one if it is used again."""
        self._ahead, self._each = [], None
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
        entry_id = module_id(filename if isinstance(entry, str) else entry.filename)
        modules: dict[str, str | ModuleSource] = {entry_id: entry}
        for path, source in (siblings or {}).items():
            if module_id(path) in modules:
                raise ValueError(f"sibling {path!r} is the entry module or given twice")
            modules[module_id(path)] = source
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
        more than ``MAX_VALUE_DEPTH`` (512) deep are refused (``SandboxValueTooDeep``), as is a
        result that deep."""
        message = call_message(path, args, ctx)
        # Encoded once: the key compared with a call sent ahead, and the request sent otherwise.
        encoded = message_encoded(message)
        ahead = self._ahead_of(encoded, budget_ms)
        # (a call sent ahead was checked when it was sent)
        if ahead is None and (deep := too_deep_in(ctx, args, encoded)) is not None:
            raise SandboxValueTooDeep(too_deep(deep))
        return self._request(message, budget_ms=budget_ms, ahead=ahead, encoded=encoded)

    def call_each(self, path: Path_, ctxs: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Call the function at ``path`` once per ``ctx`` in one exchange (a slice's row builds),
        each in a fresh scope as ``call``. Answers the values of the leading calls that settled
        at once; the list stops before the first that failed or awaited a Promise — the caller
        makes that call (and the rest) with ``call``. It also stops before a call whose promise
        job used its ``ctx`` bridge after the next call had started (the batch's jobs run
        together after its last call, so a call's bridge closes when its turn ends): that call,
        too, is made alone. The budgets (CPU, wall) are one call's times the number of ctxs; a
        batch that overruns them raises, as ``call`` does. The next part of a ``call_each_ahead``
        with the same path and ctxs is answered from its reply."""
        if not ctxs:
            return []
        message = each_message(path, ctxs)
        encoded = message_encoded(message)
        answered = self._each_answered(encoded)
        if answered is not None:
            return answered
        if encoded is None or not json_nests_within(encoded):
            for index, ctx in enumerate(ctxs):
                if nesting_exceeds(ctx):
                    raise SandboxValueTooDeep(too_deep(f"ctxs[{index}]"))
        self._host.wall_scale = len(ctxs)
        try:
            values = self._request(
                message, budget_ms=self.limits.call_budget_ms * len(ctxs), encoded=encoded
            )
        finally:
            self._host.wall_scale = 1
        return list(values)

    def slice_start(self) -> None:
        """A new slice on this interpreter: the per-slice CPU budget starts again. Calls an
        earlier slice sent ahead and never took are dropped first, so their CPU is charged to
        that slice's budget, not to the next run's (a pooled interpreter serves other runs)."""
        self._ahead_settle(None)
        self._cpu_used_ms = 0.0

    def new_run(self, *, bridge: Bridge | None = None) -> None:
        """Start the next run, optionally with other bridge functions (the next invoking user's
        ``ctx.query``). Every call starts in a fresh scope; only other bridge *names* are sent to
        the child (they mean a new QuickJS context, built with them). The slice budget carries on."""
        if bridge is not None:
            self._host.set(bridge)
        child = self._child
        if child is not None and child.has_modules and child.bridge_names != self._host.names:
            message = {"op": "new_run", "bridge": self._host.names}
            self._request(message, budget_ms=None, is_budgeted=False)
            child.bridge_names = message["bridge"]

    def _request(
        self,
        message: dict[str, Any],
        *,
        budget_ms: int | None,
        is_budgeted: bool = True,
        ahead: Ahead | None = None,
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
            started = self._host.call_starts()
            try:
                if ahead is not None and self._child is not None:
                    reply = self._child.receive(deadline_s, self._host.answer)
                elif encoded is not None and is_budgeted:  # the message, encoded by the caller
                    child = self._ready_child()
                    child.send_encoded(budgeted(encoded, budget))
                    reply = child.receive(deadline_s, self._host.answer)
                else:
                    reply = self._ready_child().exchange(message, deadline_s, self._host.answer)
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
                "bridge": self._host.names,
            }
            reply = self._child.exchange(modules_message, SPAWN_TIMEOUT_S, self._host.answer)
            if "error" in reply:
                raise self._error(reply["error"])
            self._child.has_modules = True
            self._child.bridge_names = modules_message["bridge"]
        return self._child

    def _discard_child(self) -> None:
        self._ahead, self._each = [], None  # their replies died with the child
        if self._child is not None:
            self._child.close(is_forced=True)
            self._child = None

    def wall_remaining_ms(self) -> float:
        """What is left of the running call's wall budget (for a bridge function to bound its
        own work, e.g. a read's statement timeout); the full budget outside a call."""
        return self._host.wall_remaining_ms()

    def _error(self, error: Mapping[str, Any]) -> SandboxError:
        return sandbox_error(error, self._sources)
