"""The parent's end of a child process that runs JavaScript: spawn it, and exchange JSON lines.

A child is ``python -I -B -c`` running one of the child modules' ``main`` (``sandbox_child``,
``transpile_child``) with the project root alone put first on ``sys.path``: isolated mode keeps the
environment, the user's site and the working directory out, and the child modules import only the
standard library, dukpy and each other (``tests/extensions/test_child_imports.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import sys
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SANDBOX_CHILD = "extensions.sandbox_child"
SPAWN_TIMEOUT_S = 20.0


def child_command(module: str, *args: str) -> list[str]:
    """The command line that runs ``module.main(sys.argv)`` isolated, with ``args`` after it."""
    bootstrap = (
        f"import sys; sys.path.insert(0, {str(PROJECT_ROOT)!r}); "
        f"from {module} import main; sys.exit(main(sys.argv))"
    )
    return [sys.executable, "-I", "-B", "-c", bootstrap, *args]


class ChildOverrun(Exception):
    """The child did not answer before the wall-clock deadline."""


class ChildExited(Exception):
    """The child process ended; ``args[0]`` is its return code."""


class ChildProcess:
    """The pipes to one child process and the JSON-lines exchange over them."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.has_modules = False
        self.bridge_names: Any = None  # the bridge names the child was last told
        self._pid_of_owner = os.getpid()
        self._buffer = bytearray()
        self._selector = selectors.DefaultSelector()
        assert process.stdout is not None
        self._selector.register(process.stdout, selectors.EVENT_READ)
        self._finalizer = weakref.finalize(self, _reap, process, self._selector)

    @classmethod
    def spawn(
        cls, *, memory_mb: int, cpu_seconds: int, module: str = SANDBOX_CHILD
    ) -> ChildProcess:
        """Start the child ``module`` (``sandbox_child``, or another child speaking the same JSON
        lines, such as ``transpile_child``) and wait for its ``{"ready": true}``."""
        command = child_command(module, str(memory_mb), str(cpu_seconds))
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
