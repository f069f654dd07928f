"""The sandbox child's end of the pipe: JSON lines over its stdin/stdout (stdlib only)."""

from __future__ import annotations

import collections
import json
import signal
import sys
from typing import Any

from extensions.value_depth import too_deep


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
