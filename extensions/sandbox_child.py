"""The sandbox's child process: one QuickJS interpreter serving a whole slice over JSON lines.

Run as a script by ``extensions.sandbox.Sandbox`` (``python -I -B sandbox_child.py MEM_MB CPU_S``);
it imports only the standard library and dukpy, never Django or the project, so nothing of the
host is loaded into the process that runs author code. The protocol is one JSON object per line:
the parent sends ``{"op": ...}`` requests; the child answers ``{"ok": value, "cpu_ms": n}`` or
``{"error": {"code", "message", "location"}, "cpu_ms": n}``, and while a call is running it may
ask ``{"bridge": name, "args": [...]}`` and wait for ``{"ok": value}`` / ``{"error": message}``.

Why a CPU timer works here: dukpy installs a QuickJS interrupt handler that calls
``PyErr_CheckSignals()``, so an exception raised by a Python signal handler stops a running
script (even a catastrophic regex) and surfaces from ``eval_string`` as that exception; QuickJS
makes the interrupt uncatchable by the script. That only works in a main thread, which this
child's is, whatever thread of the parent is driving it.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import resource
import selectors
import signal
import subprocess
import sys
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dukpy import _dukpy

CHILD_SCRIPT = Path(__file__).resolve()
JS_DIR = CHILD_SCRIPT.parent / "js"
SPAWN_TIMEOUT_S = 20.0
SDK_ID = "@turbobase/extensions"
VIOLATION = "turbobase.violation"
# dukpy's QuickJS heap limit is fixed at 128 MiB per context; a larger result than this is a
# runaway, not a record payload, and would otherwise be copied three times on its way out.
MAX_RESULT_BYTES = 16 * 1024 * 1024
# How deep a JSON value crossing the boundary (ctx, args, results, bridge calls) may nest. Python's
# json recursion gives out near 1,000; a documented limit below it refuses by name instead.
MAX_VALUE_DEPTH = 512
# The default export's JSON picture is drawn by recursion in JavaScript (runtime.js snapshot),
# whose stack holds ~200 levels; a definition is a page of object literals, far shallower.
MAX_DESCRIBE_DEPTH = 100
# After the budget, the timer keeps firing at this interval so a timeout the script swallowed
# (one raised inside a bridge call becomes a catchable JS error) is raised again at once.
TIMER_REPEAT_S = 0.005

_FRAME = re.compile(r"at (?:\S+ \()?(?P<file>[^\s()]+):(?P<line>\d+):(?P<column>\d+)\)?")
_WRAPPER = (
    "__turbobase.register({id}, function (exports, require, module, __filename, __dirname) {{"
)
_WRAPPER_END = "\n});"


class Fault(Exception):
    """A failure the parent maps onto one of the public ``Sandbox*`` exceptions by ``code``."""

    def __init__(self, code: str, message: str, location: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.location = location

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "location": self.location}


def nesting_exceeds(value: Any, limit: int = MAX_VALUE_DEPTH) -> bool:
    """True when ``value`` (JSON-shaped) nests lists and dicts more than ``limit`` deep.
    Recursive, descending only into containers and stopping one level past ``limit``: a value
    deep enough to break recursion is measured too, and where the caller's own stack leaves too
    little room for ``limit`` frames the iterative walk answers instead."""
    try:
        return _exceeds(value, limit)
    except RecursionError:
        return _exceeds_iterative(value, limit)


def _exceeds(value: Any, room: int) -> bool:
    """``nesting_exceeds`` with ``room`` container levels left (this one included). A call per
    container only — the scalars that make up most of a ctx cost one ``isinstance`` — where the
    iterative walk pushed and popped every value (~5x the CPU, on every call's ctx)."""
    if isinstance(value, dict):
        children: Any = value.values()
    elif isinstance(value, list | tuple):
        children = value
    else:
        return False
    if room <= 0:
        return True
    room -= 1
    # A loop, not any(): a generator would cost a frame per level and time per value.
    for child in children:  # noqa: SIM110
        if isinstance(child, _CONTAINERS) and _exceeds(child, room):
            return True
    return False


_CONTAINERS = (dict, list, tuple)


def _exceeds_iterative(value: Any, limit: int) -> bool:
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def json_nests_within(text: bytes | str, limit: int = MAX_VALUE_DEPTH) -> bool:
    """True when the JSON ``text`` cannot nest more than ``limit`` deep: it opens no more than
    ``limit`` arrays and objects (counting brackets inside strings too, which only errs towards
    False). Every list, tuple and dict is written with its bracket, so a value whose encoding
    passes needs no walk; a ctx or result of a few KB has tens of them, and counting them costs
    a few microseconds where the walk costs tens."""
    if isinstance(text, str):
        return text.count("[") + text.count("{") <= limit
    return text.count(b"[") + text.count(b"{") <= limit


def json_loads_bounded(raw: bytes | str, what: str) -> Any:
    """``json.loads`` refusing, by name, a value nested past ``MAX_VALUE_DEPTH``."""
    try:
        value = json.loads(raw)
    except RecursionError:
        value, is_deep = None, True
    else:
        is_deep = not json_nests_within(raw) and nesting_exceeds(value)
    if is_deep:
        raise Fault("sandbox_value_too_deep", too_deep(what))
    return value


def too_deep(what: str, limit: int = MAX_VALUE_DEPTH) -> str:
    return f"{what} is nested more than {limit} deep (the sandbox's limit for values)"


STALE_AT_LOAD = (
    "loading the modules leaves state on the global object that a fresh call cannot clear "
    "(a global that cannot be deleted, or a frozen or re-parented global object)"
)


class CpuBudgetExceeded(BaseException):
    """Raised by the SIGPROF handler; BaseException so no ``except Exception`` swallows it."""


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
                "sandbox_memory_exceeded", f"result is larger than {MAX_RESULT_BYTES} bytes"
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
    "sandbox_timeout",
    "sandbox_time_budget_exceeded",
    "sandbox_memory_exceeded",
    "sandbox_stack_overflow",
    "sandbox_violation",
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
            late = self._aborted or Fault("sandbox_timeout", "CPU budget exceeded")
            reply = {"error": late.as_dict()}
        except MemoryError:
            self._realm = None
            reply = {"error": Fault("sandbox_memory_exceeded", "out of memory").as_dict()}
        except Exception as exc:  # answered, not a traceback: the child's stderr is the host's log
            self._realm = None
            message = f"the sandbox could not complete the call ({type(exc).__name__})"
            reply = {"error": Fault("sandbox_error", message).as_dict()}
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
            raise Fault("sandbox_value_too_deep", request["message"])
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
        raise Fault("sandbox_error", f"unknown op {op!r}")

    def _describe(self, realm: Realm, path: list[Any]) -> Any:
        described = realm.checked(realm.eval(_DESCRIBE, path=path, what="the default export"))
        if described.get("tooDeep"):
            raise Fault(
                "sandbox_value_too_deep", too_deep("the default export", MAX_DESCRIBE_DEPTH)
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
        raise Fault("sandbox_promise_unsettled", f"the Promise returned by {name} never settled")

    def _call_each(self, realm: Realm, request: dict[str, Any]) -> list[Any]:
        """The values of the leading calls that settled; the first that did not ends the list
        (the parent runs it alone, where its failure is classified as any call's)."""
        name = ".".join(["default", *map(str, request["path"])])
        is_clean, *outcomes = realm.eval(
            _INVOKE_EACH,
            path=request["path"],
            ctxs=request["ctxs"],
            what=f"the values {name} returned",
        )
        realm.is_clean = is_clean is True
        values = []
        for outcome in outcomes:
            if outcome["state"] != "fulfilled":
                break
            values.append(outcome.get("value"))
        return values

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
            fault = Fault("sandbox_timeout", f"CPU budget of {budget_s * 1000:.0f} ms exceeded")
        except _dukpy.JSRuntimeError as error:
            fault = classify_text(str(error), self._realm.offsets if self._realm else {})
        except Fault as raised:
            fault = raised
        finally:
            self._disarm()
        realm = self._realm
        if realm is not None and realm.violation is not None:
            fault = Fault("sandbox_violation", realm.violation)
        elif self._aborted is not None:
            fault = self._aborted
        elif self._timed_out:  # the script caught the timeout raised inside a bridge call
            fault = Fault("sandbox_timeout", f"CPU budget of {budget_s * 1000:.0f} ms exceeded")
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
            raise Fault("sandbox_error", "no module is loaded")
        for module_id, code in self._modules.items():
            realm.register(module_id, code)
        realm.checked(realm.eval(_START, entry=self._entry))
        if not realm.is_clean:  # every call on every realm would start where this one is
            raise Fault("sandbox_violation", STALE_AT_LOAD)

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


def classify_text(text: str, offsets: dict[str, int]) -> Fault:
    """Classify dukpy's ``JSRuntimeError`` text: ``"Name: message"`` then QuickJS stack lines."""
    first, _, stack = text.partition("\n")
    name, separator, message = first.partition(": ")
    if not separator or not re.fullmatch(r"[A-Za-z]*Error", name):
        name, message = "Error", first
    return classify(name, message, stack, offsets)


def classify(name: str, message: str, stack: str, offsets: dict[str, int]) -> Fault:
    if name == "InternalError" and message == "out of memory":
        return Fault("sandbox_memory_exceeded", "the script exceeded the sandbox's memory limit")
    if name == "InternalError" and message == "interrupted":
        return Fault("sandbox_timeout", "CPU budget exceeded")
    if "stack size exceeded" in message or (
        name == "InternalError" and message == "stack overflow"
    ):
        return Fault("sandbox_stack_overflow", f"{name}: {message} (runaway recursion)")
    return Fault("sandbox_script_error", f"{name}: {message}", locate(stack, offsets))


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


class Channel:
    """JSON lines over the child's stdin/stdout. The parent may send the next request before
    this one's reply (``Sandbox.call_ahead``): a request read while waiting for a bridge answer
    is kept and handled after the call in hand (requests carry ``op``, answers never do)."""

    def __init__(self, reader: Any, writer: Any) -> None:
        self._reader = reader
        self._writer = writer
        self._queued: collections.deque[dict[str, Any]] = collections.deque()

    def send(self, message: dict[str, Any]) -> None:
        self._writer.write(json.dumps(message, allow_nan=False).encode("utf-8") + b"\n")
        self._writer.flush()

    def receive(self) -> dict[str, Any] | None:
        if self._queued:
            return self._queued.popleft()
        return self._read()

    def _read(self) -> dict[str, Any] | None:
        line = self._reader.readline()
        if not line:
            return None
        try:
            message: dict[str, Any] = json.loads(line)
        except RecursionError:  # the parent checks depth before sending; answer, never crash
            message = {"op": "refuse", "message": too_deep("the request")}
        return message

    def ask(self, name: str, args: list[Any]) -> dict[str, Any]:
        # The CPU timer must not interrupt half an exchange: the parent's answer would be
        # left in the pipe and read as the next request. A pending SIGPROF fires on unblock.
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPROF})
        try:
            self.send({"bridge": name, "args": args})
            reply = self._read()
            while reply is not None and "op" in reply:  # a request sent ahead: after this call
                self._queued.append(reply)
                reply = self._read()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        if reply is None:
            sys.exit(0)  # the parent went away mid-call
        return reply


# The parent's end of the pipe (used by extensions.sandbox, never in the child).


class ChildOverrun(Exception):
    """The child did not answer before the wall-clock deadline."""


class ChildExited(Exception):
    """The child process ended; ``args[0]`` is its return code."""


class ChildProcess:
    """The pipes to one ``sandbox_child.py`` process and the JSON-lines exchange over them."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.has_modules = False
        self._pid_of_owner = os.getpid()
        self._buffer = bytearray()
        self._selector = selectors.DefaultSelector()
        assert process.stdout is not None
        self._selector.register(process.stdout, selectors.EVENT_READ)
        self._finalizer = weakref.finalize(self, _reap, process, self._selector)

    @classmethod
    def spawn(
        cls, *, memory_mb: int, cpu_seconds: int, script: Path = CHILD_SCRIPT
    ) -> ChildProcess:
        """Start ``script`` (this file, or another stdlib + dukpy child speaking the same JSON
        lines, such as ``transpile_child.py``) and wait for its ``{"ready": true}``."""
        command = [sys.executable, "-I", "-B", str(script), str(memory_mb), str(cpu_seconds)]
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={},
            cwd="/",
            start_new_session=True,
            close_fds=True,
            bufsize=0,
        )
        child = cls(process)
        try:
            if child._read(time.monotonic() + SPAWN_TIMEOUT_S).get("ready"):
                return child
        except ChildOverrun:
            pass
        child.close(is_forced=True)
        raise ChildExited(process.returncode)

    def is_owned(self) -> bool:
        """False in a process forked after the spawn: the child belongs to the parent."""
        return self._pid_of_owner == os.getpid()

    def is_usable(self) -> bool:
        return self.is_owned() and self.process.poll() is None

    def exchange(
        self,
        message: dict[str, Any],
        deadline_s: float,
        answer: Callable[[str, list[Any]], dict[str, Any]],
    ) -> dict[str, Any]:
        """Send one request and read until its reply, answering bridge requests on the way;
        the wall-clock deadline does not run while the bridge is being answered."""
        self.send(message)
        return self.receive(deadline_s, answer)

    def send(self, message: dict[str, Any]) -> None:
        """Send one request; its reply is read by ``receive`` (the child works meanwhile)."""
        try:
            self._write(message)
        except TypeError as exc:
            raise TypeError(f"only JSON values cross the sandbox boundary: {exc}") from None

    def receive(
        self, deadline_s: float, answer: Callable[[str, list[Any]], dict[str, Any]]
    ) -> dict[str, Any]:
        """Read until the reply to the request sent last, answering bridge requests on the way;
        ``deadline_s`` runs from now, and not while the bridge is being answered."""
        deadline = time.monotonic() + deadline_s
        while True:
            reply = self._read(deadline)
            if "bridge" not in reply:
                return reply
            paused = time.monotonic()
            response = answer(reply["bridge"], reply.get("args", []))
            deadline += time.monotonic() - paused
            self._write(response)

    def _write(self, message: dict[str, Any]) -> None:
        try:
            encoded = json.dumps(message, allow_nan=False)
        except ValueError as exc:
            raise TypeError(str(exc)) from None
        self.send_encoded(encoded)

    def send_encoded(self, encoded: str) -> None:
        """Send one request already encoded as JSON (one line)."""
        data = encoded.encode("utf-8") + b"\n"
        assert self.process.stdin is not None
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.process.stdin.fileno(), view) :]
        except OSError:  # BrokenPipeError: the child is gone
            raise ChildExited(self.process.wait()) from None

    def _read(self, deadline: float) -> dict[str, Any]:
        assert self.process.stdout is not None
        while (newline := self._buffer.find(b"\n")) < 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ChildOverrun
            if not self._selector.select(remaining):
                continue
            chunk = os.read(self.process.stdout.fileno(), 1 << 16)
            if not chunk:
                raise ChildExited(self.process.wait())
            self._buffer += chunk
        line = bytes(self._buffer[:newline])
        del self._buffer[: newline + 1]
        message: dict[str, Any] = json.loads(line)
        return message

    def close(self, *, is_forced: bool = False) -> None:
        """End the child: closing stdin ends its loop; ``is_forced`` kills it first. In a
        process forked after the spawn only our copies of the pipes are closed: the child
        belongs to the parent that spawned it."""
        if not self.is_owned():
            self._finalizer.detach()
            _close_pipes(self.process, self._selector)
            return
        if is_forced and self.process.poll() is None:
            self.process.kill()
        self._finalizer()


def _close_pipes(process: subprocess.Popen[bytes], selector: selectors.BaseSelector) -> None:
    selector.close()
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def _reap(process: subprocess.Popen[bytes], selector: selectors.BaseSelector) -> None:
    _close_pipes(process, selector)
    try:
        process.wait(timeout=2)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when this process ends
    # Backstops under the per-call timer: address space for Python-side allocations QuickJS's
    # heap limit does not see, lifetime CPU for anything the timer cannot stop.
    memory, cpu_seconds = int(argv[1]) * 1024 * 1024, int(argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a stray write to stdout (Python or C) must not corrupt the protocol
    sys.stdout = sys.stderr
    channel = Channel(sys.stdin.buffer, protocol)
    engine = Engine(channel)
    channel.send({"ready": True})
    while (request := channel.receive()) is not None:
        channel.send(engine.handle(request))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
