"""What the look-ahead tests share (``test_sandbox_ahead``, ``test_sandbox_each_ahead``): the
bridge's ``query`` that records its reads, a loaded sandbox, and the requests children receive."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from extensions.child_process import ChildProcess
from extensions.sandbox import Sandbox, SandboxLimits

LIMITS = SandboxLimits(call_budget_ms=300, slice_budget_ms=20_000)


class Host:
    """The bridge's ``query``: records each read it runs and whether the caller was taking
    (``call`` or ``call_each`` had begun) when it ran."""

    def __init__(self) -> None:
        self.taking = False
        self.reads: list[tuple[str, bool]] = []

    def query(self, path: str) -> list[dict[str, Any]]:
        self.reads.append((path, self.taking))
        return [{"read": path}]


@contextmanager
def sandbox_loaded(module: str, host: Host) -> Iterator[Sandbox]:
    with Sandbox(bridge={"query": host.query}, limits=LIMITS) as sandbox:
        sandbox.load(module)
        yield sandbox


def requests_recorded(monkeypatch: pytest.MonkeyPatch, entry: Callable[[dict], Any]) -> list:
    """``entry(message)`` of each request sandbox children receive, in order (the real
    ``ChildProcess.send_encoded``, observed, nothing changed; a bridge answer is not a request)."""
    requests: list = []
    send_encoded = ChildProcess.send_encoded

    def recording(self: ChildProcess, encoded: str) -> None:
        for line in encoded.splitlines():  # calls sent ahead together are one line each
            message = json.loads(line)
            if "op" in message:
                requests.append(entry(message))
        send_encoded(self, encoded)

    monkeypatch.setattr(ChildProcess, "send_encoded", recording)
    return requests
