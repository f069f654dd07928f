"""The sandbox's child process: one QuickJS interpreter serving a whole slice over JSON lines.

Run by ``extensions.sandbox.Sandbox`` through ``child_process.ChildProcess`` (``python -I -B -c``,
``main(argv)``, ``argv`` ``[_, MEM_MB, CPU_S]``). It imports the standard library, dukpy and the
child modules only (``child_*``, ``sandbox_faults``, ``value_depth``, ``codes``), never Django.
The protocol is one JSON object per line: ``{"op": ...}`` requests, answered ``{"ok": value,
"cpu_ms": n}`` or ``{"error": {"code", "message", "location"}, "cpu_ms": n}``; while a call runs
the child may ask ``{"bridge": name, "args": [...]}`` and wait for ``{"ok": value}`` / ``{"error":
message}``. Why the CPU timer works here: docs/sandbox.md.
"""

from __future__ import annotations

import functools
import itertools
import json
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dukpy import _dukpy

from extensions.child_channel import Channel
from extensions.child_confine import child_confine
from extensions.codes import ExtensionCode
from extensions.sandbox_faults import (
    MAX_DESCRIBE_DEPTH,
    MAX_RESULT_BYTES,
    CpuBudgetExceeded,
    Fault,
    classify,
    classify_text,
    json_loads_bounded,
)
from extensions.value_depth import too_deep

JS_DIR = Path(__file__).resolve().parent / "js"
SDK_ID = "@turbobase/extensions"
VIOLATION = "turbobase.violation"
# After the budget, the timer keeps firing at this interval so a timeout the script swallowed
# (one raised inside a bridge call becomes a catchable JS error) is raised again at once.
TIMER_REPEAT_S = 0.005

_WRAPPER = (
    "__turbobase.register({id}, function (exports, require, module, __filename, __dirname) {{"
)
_WRAPPER_END = "\n});"
STALE_AT_LOAD = (
    "loading the modules leaves state on the global object that a fresh call cannot clear "
    "(a global that cannot be deleted, or a frozen or re-parented global object)"
)


class Realm:
    """One QuickJS context: the object dukpy's C code calls back into.

    dukpy looks up three methods on the object passed to ``eval_string``:
    ``_check_exported_function_exists`` and ``_call_python`` (for ``call_python``, which it
    re-installs on the global object on *every* eval) and ``_normalize_module`` (for ``import``).
    Only names in the allow-list pass; anything else is recorded as a violation that fails the
    call even if the script catches the ReferenceError it gets.
    """

    def __init__(self, *, bridge_names: tuple[str, ...], on_bridge: BridgeHandler) -> None:
        self._ctx = _dukpy.create_context()
        self._exported = frozenset(bridge_names) | {VIOLATION}
        self._on_bridge = on_bridge
        self.violation: str | None = None
        # Whether the last eval ended in runtime.js's check with a global object fit for the next
        # call (``checked``); any eval clears it first, so one that throws leaves it False.
        self.is_clean = False
        self.offsets: dict[str, int] = {}
        runtime = (JS_DIR / "runtime.js").read_text(encoding="utf-8")
        self.eval(
            f"({runtime})(call_python, dukpy.bridge, dukpy.describeDepth);",
            bridge=list(bridge_names),
            describeDepth=MAX_DESCRIBE_DEPTH,
        )
        self.register(SDK_ID, (JS_DIR / "sdk.js").read_text(encoding="utf-8"))

    def _check_exported_function_exists(self, name: bytes) -> bool:
        text = name.decode("utf-8", "replace")
        if text in self._exported:
            return True
        self._record(f"call_python('{text}') is not an exported function")
        return False

    def _call_python(self, name: bytes, json_args: bytes) -> bytes:
        text = name.decode("utf-8", "replace")
        try:
            args = json_loads_bounded(json_args, f"the arguments of ctx.{text}")
        except Fault as fault:
            return json.dumps({"error": fault.message}).encode("utf-8")
        if text == VIOLATION:
            self._record(str(args[0]) if args else "sandbox violation")
            return b"null"
        return json.dumps(self._on_bridge(text, args)).encode("utf-8")

    def _normalize_module(self, base: str, name: str) -> str:
        self._record(f"import('{name}') is not allowed: extensions are loaded as CommonJS")
        raise ImportError(name)

    def _record(self, message: str) -> None:
        if self.violation is None:
            self.violation = message

    def eval(
        self,
        code: str,
        *,
        module_name: str | None = None,
        what: str = "the result",
        **variables: Any,
    ) -> Any:
        """Evaluate ``code``; ``module_name`` evaluates it as an ES module of that file name,
        the only way dukpy puts a real file name into stack traces. ``what`` names the value
        returned, for a refusal of one nested too deep."""
        self.is_clean = False
        raw = _dukpy.eval_string(
            self,
            code.encode("utf-8"),
            json.dumps(variables, allow_nan=False).encode("utf-8"),
            module_name is not None,
            module_name or "<turbobase>",
        )
        if raw is not None and len(raw) > MAX_RESULT_BYTES:
            raise Fault(
                ExtensionCode.SANDBOX_MEMORY_EXCEEDED,
                f"result is larger than {MAX_RESULT_BYTES} bytes",
            )
        return None if raw is None else json_loads_bounded(raw, what)

    def checked(self, answer: Any) -> Any:
        """``answer`` (an object from runtime.js ``lastWord``) without its ``clean`` flag, which
        becomes ``is_clean``: whether the realm may serve the next call."""
        self.is_clean = answer.pop("clean") is True
        return answer

    def register(self, module_id: str, commonjs: str) -> None:
        prefix = _WRAPPER.format(id=json.dumps(module_id))
        self.offsets[module_id] = len(prefix)
        self.eval(prefix + commonjs + _WRAPPER_END, module_name=module_id)


BridgeHandler = Callable[[str, list[Any]], dict[str, Any]]
# Every eval that can run author code first takes the two globals dukpy re-installs.
_ENTRY = (
    "(function (v) {{ delete globalThis.dukpy; delete globalThis.call_python;"
    " return __turbobase.{call}; }})(dukpy)"
)
_START = _ENTRY.format(call="start(v.entry)")
_DESCRIBE = _ENTRY.format(call="describe(v.path)")
_INVOKE = _ENTRY.format(call="invoke(v.path, v.args, v.ctx)")
_INVOKE_EACH = _ENTRY.format(call="invokeEach(v.path, v.ctxs)")
# After these the realm is not trusted to be in a usable state (or was attacked): drop it.
_RESETTING = {
    ExtensionCode.SANDBOX_TIMEOUT,
    ExtensionCode.SANDBOX_TIME_BUDGET_EXCEEDED,
    ExtensionCode.SANDBOX_MEMORY_EXCEEDED,
    ExtensionCode.SANDBOX_STACK_OVERFLOW,
    ExtensionCode.SANDBOX_VIOLATION,
}


class Engine:
    """The child's state between requests: the loaded module set and the current realm.

    Every call runs in a fresh scope of the realm: each eval ends in runtime.js ``fresh()``
    (the modules dropped, to be instantiated again, added globals deleted; the built-ins are
    frozen), so nothing one call leaves behind is seen by the next. A realm whose last eval did
    not end clean (``Realm.is_clean``: the check could not undo what the call did, or the eval
    threw before it) is replaced before the next call; a timeout, memory overrun or violation
    drops it too, and so does ``new_run`` with other bridge functions (they are baked into it).
    """

    def __init__(self, channel: Channel) -> None:
        self._channel = channel
        self._modules: dict[str, str] = {}
        self._entry: str | None = None
        self._bridge_names: tuple[str, ...] = ()
        self._realm: Realm | None = None
        self._spare: Realm | None = None  # built, not yet populated with the modules
        self._armed = False
        self._timed_out = False
        self._aborted: Fault | None = None  # the parent refused further bridge calls
        self._is_in_bridge = False
        signal.signal(signal.SIGPROF, self._on_cpu_timer)

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        # The thread's CPU clock: with RLIMIT_CPU set, this kernel samples the process clock
        # at tick granularity (most calls read 0 ms), so per-call figures would be noise.
        started = time.thread_time()
        try:
            reply: dict[str, Any] = {"ok": self._dispatch(request)}
        except Fault as fault:
            reply = {"error": fault.as_dict()}
        except CpuBudgetExceeded:  # the timer fired after the work, while disarming it
            self._disarm()
            self._realm = None
            late = self._aborted or Fault(ExtensionCode.SANDBOX_TIMEOUT, "CPU budget exceeded")
            reply = {"error": late.as_dict()}
        except MemoryError:
            self._realm = None
            reply = {
                "error": Fault(ExtensionCode.SANDBOX_MEMORY_EXCEEDED, "out of memory").as_dict()
            }
        except Exception as exc:  # answered, not a traceback: the child's stderr is the host's log
            self._realm = None
            message = f"the sandbox could not complete the call ({type(exc).__name__})"
            reply = {"error": Fault(ExtensionCode.SANDBOX_ERROR, message).as_dict()}
        reply["cpu_ms"] = round((time.thread_time() - started) * 1000, 3)
        return reply

    def _dispatch(self, request: dict[str, Any]) -> Any:
        op = request["op"]
        if op in ("modules", "new_run"):
            bridge_names = tuple(request.get("bridge", self._bridge_names))
            if op == "modules":
                self._modules = dict(request["modules"])
                self._entry = request["entry"]
                self._realm = None
            elif bridge_names != self._bridge_names:
                self._realm = None
            if bridge_names != self._bridge_names:
                self._spare = None
            self._bridge_names = bridge_names
            return None
        if op == "refuse":
            raise Fault(ExtensionCode.SANDBOX_VALUE_TOO_DEEP, request["message"])
        budget_s = request["budget_ms"] / 1000
        if op == "load":
            self._realm = None
            return self._run(budget_s, lambda realm: self._describe(realm, []))
        if op == "describe":
            path = request["path"]
            return self._run(budget_s, lambda realm: self._describe(realm, path)).get("value")
        if op == "call":
            return self._run(budget_s, lambda realm: self._call(realm, request))
        if op == "call_each":
            return self._run(budget_s, lambda realm: self._call_each(realm, request))
        if op == "call_each_many":  # a migration's next batch, sent ahead: each part in turn
            outcomes: list[Any] = []
            per_call_s = budget_s / max(1, sum(len(call["ctxs"]) for call in request["calls"]))
            for call in request["calls"]:
                action = functools.partial(self._call_each, request=call)
                try:
                    outcomes.append({"ok": self._run(per_call_s * len(call["ctxs"]), action)})
                except Fault as fault:  # the parts after it are not run
                    outcomes.append({"error": fault.as_dict()})
                    break
            return outcomes
        raise Fault(ExtensionCode.SANDBOX_ERROR, f"unknown op {op!r}")

    def _describe(self, realm: Realm, path: list[Any]) -> Any:
        described = realm.checked(realm.eval(_DESCRIBE, path=path, what="the default export"))
        if described.get("tooDeep"):
            raise Fault(
                ExtensionCode.SANDBOX_VALUE_TOO_DEEP,
                too_deep("the default export", MAX_DESCRIBE_DEPTH),
            )
        return described

    def _call(self, realm: Realm, request: dict[str, Any]) -> Any:
        name = ".".join(["default", *map(str, request["path"])])
        answer = realm.eval(
            _INVOKE,
            path=request["path"],
            args=request["args"],
            ctx=request["ctx"],
            what=f"the value {name} returned",
        )
        outcome = realm.checked(answer)
        if outcome["state"] == "fulfilled":
            return outcome.get("value")
        if outcome["state"] == "rejected":
            error = outcome["error"]
            raise classify(error["name"], error["message"], error["stack"], realm.offsets)
        raise Fault(
            ExtensionCode.SANDBOX_PROMISE_UNSETTLED, f"the Promise returned by {name} never settled"
        )

    def _call_each(self, realm: Realm, request: dict[str, Any]) -> list[Any]:
        """The values of the leading calls that settled; the first that did not ends the list
        (the parent runs it alone, where its failure is classified as any call's)."""
        name = ".".join(["default", *map(str, request["path"])])
        what = f"the values {name} returned"
        is_clean, *outcomes = realm.eval(
            _INVOKE_EACH, path=request["path"], ctxs=request["ctxs"], what=what
        )
        realm.is_clean = is_clean is True
        settled = itertools.takewhile(lambda outcome: outcome["state"] == "fulfilled", outcomes)
        return [outcome.get("value") for outcome in settled]

    def _run(self, budget_s: float, action: Callable[[Realm], Any]) -> Any:
        """Run ``action`` on the run's realm (building it first) under the CPU budget."""
        fault: Fault | None = None
        result: Any = None
        is_new = self._realm is None
        if is_new and self._spare is None:
            # Our own set-up (runtime.js and the lock-down, ~20-40 ms) is not the author's CPU:
            # only populating it with the modules runs under the budget.
            self._spare = Realm(bridge_names=self._bridge_names, on_bridge=self._bridge)
        self._timed_out = False
        self._aborted = None
        self._armed = True
        signal.setitimer(signal.ITIMER_PROF, max(budget_s, 0.001), TIMER_REPEAT_S)
        try:
            result = action(self._ready_realm())
        except CpuBudgetExceeded:
            fault = Fault(
                ExtensionCode.SANDBOX_TIMEOUT, f"CPU budget of {budget_s * 1000:.0f} ms exceeded"
            )
        except _dukpy.JSRuntimeError as error:
            fault = classify_text(str(error), self._realm.offsets if self._realm else {})
        except Fault as raised:
            fault = raised
        finally:
            self._disarm()
        realm = self._realm
        if realm is not None and realm.violation is not None:
            fault = Fault(ExtensionCode.SANDBOX_VIOLATION, realm.violation)
        elif self._aborted is not None:
            fault = self._aborted
        elif self._timed_out:  # the script caught the timeout raised inside a bridge call
            fault = Fault(
                ExtensionCode.SANDBOX_TIMEOUT, f"CPU budget of {budget_s * 1000:.0f} ms exceeded"
            )
        if realm is not None and not realm.is_clean:  # the next call would not start fresh
            self._realm = None
        if fault is not None:
            if is_new or fault.code in _RESETTING:
                self._realm = None
            raise fault
        return result

    def _disarm(self) -> None:
        """Stop the CPU timer; a tick that lands while stopping it is swallowed, not raised
        into the request loop (the repeating timer would otherwise outlive the call)."""
        while True:
            try:
                signal.setitimer(signal.ITIMER_PROF, 0)
                self._armed = False
                return
            except CpuBudgetExceeded:
                continue

    def _ready_realm(self) -> Realm:
        if self._realm is None:  # set before populating: a failure's location reads its offsets
            self._realm = self._spare or Realm(
                bridge_names=self._bridge_names, on_bridge=self._bridge
            )
            self._spare = None
            self._populate(self._realm)
        return self._realm

    def _populate(self, realm: Realm) -> None:
        if self._entry is None:
            raise Fault(ExtensionCode.SANDBOX_ERROR, "no module is loaded")
        for module_id, code in self._modules.items():
            realm.register(module_id, code)
        realm.checked(realm.eval(_START, entry=self._entry))
        if not realm.is_clean:  # every call on every realm would start where this one is
            raise Fault(ExtensionCode.SANDBOX_VIOLATION, STALE_AT_LOAD)

    def _bridge(self, name: str, args: list[Any]) -> dict[str, Any]:
        # An exception raised here would reach the script as a catchable error, so a timeout
        # that lands during a bridge call answers "halt" instead: runtime.js then spins until
        # the repeating timer fires again inside JavaScript, where it cannot be caught.
        self._is_in_bridge = True
        try:
            if self._timed_out or self._aborted is not None:
                return {"halt": True}
            reply = self._channel.ask(name, args)
            if "abort" in reply:
                # The parent stopped the call (its wall budget is spent): end it now, as a
                # timeout would, rather than let the script spend the rest of its CPU budget.
                self._aborted = Fault(**reply["abort"])
                signal.setitimer(signal.ITIMER_PROF, 0.001, TIMER_REPEAT_S)
                return {"halt": True}
            return {"halt": True} if self._timed_out else reply
        finally:
            self._is_in_bridge = False

    def _on_cpu_timer(self, signum: int, frame: Any) -> None:
        if self._armed:
            self._timed_out = True
            if not self._is_in_bridge:
                raise CpuBudgetExceeded


def main(argv: list[str]) -> int:
    channel = Channel(sys.stdin.buffer, child_confine(argv))
    engine = Engine(channel)
    channel.send({"ready": True})
    while (request := channel.receive()) is not None:
        channel.send(engine.handle(request))
    return 0
