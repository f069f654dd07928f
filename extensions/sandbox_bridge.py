"""The host's side of ``ctx.<name>``: the bridge functions a sandboxed call may ask the parent
to run, ``ctx.log``'s bound, and the call's wall budget, which a bridge answer enforces."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from extensions.sandbox_errors import SandboxTimeBudgetExceeded
from extensions.value_depth import json_nests_within, nesting_exceeds, too_deep
from kernel.text import LOG_LINE_MAX_CHARS, LOG_LINES_PER_CALL, text_clean

Bridge = Mapping[str, Callable[..., Any]]
logger = logging.getLogger("turbobase.extensions.sandbox")


class BridgeError(Exception):
    """Raised by a bridge function to fail the JavaScript call with this message (``ctx.query``
    rejects with it). Any other exception reaches the script as a bare "ctx.<name> failed", so
    host details do not leak into author code; exceptions carrying a ``code`` (the domain
    errors) are passed through like this one."""


def _log(*parts: Any) -> None:
    line = " ".join(p if isinstance(p, str) else json.dumps(p) for p in parts)
    # An extension's words reach the server's or worker's log: bounded, and safe to encode.
    logger.info(text_clean(line, LOG_LINE_MAX_CHARS))


class BridgeHost:
    """The bridge functions of one ``Sandbox`` and the clock of the call in hand.

    ``in_call`` is the sandbox's lock: held while a call runs, which is when the wall budget
    counts down; outside a call the whole budget is left."""

    def __init__(self, *, wall_budget_ms: int, in_call: threading.Lock) -> None:
        self.wall_budget_ms = wall_budget_ms
        self._in_call = in_call
        self.functions: dict[str, Callable[..., Any]] = {}
        self.call_started = 0.0
        self.log_lines = 0  # ctx.log lines written by the call in hand (LOG_LINES_PER_CALL)
        self.wall_scale = 1  # calls in the exchange in hand (call_each): the wall budget's multiple

    @property
    def names(self) -> list[str]:
        return sorted(self.functions)

    def set(self, bridge: Bridge | None) -> None:
        """Replace the bridge functions (``log`` is always there)."""
        functions: dict[str, Callable[..., Any]] = {"log": self.log_counted, **(bridge or {})}
        for name in functions:
            if not name.isidentifier() or name.startswith("_"):
                raise ValueError(f"bridge function name {name!r} is not a plain identifier")
        self.functions = functions

    def call_starts(self) -> float:
        """A call's wall clock and ``ctx.log`` count start now; answers the start."""
        self.call_started = time.monotonic()
        self.log_lines = 0
        return self.call_started

    def log_counted(self, *parts: Any) -> None:
        """``ctx.log``: at most ``LOG_LINES_PER_CALL`` lines per call, then one line saying so."""
        self.log_lines += 1
        allowed = LOG_LINES_PER_CALL * self.wall_scale
        if self.log_lines <= allowed:
            _log(*parts)
        elif self.log_lines == allowed + 1:
            logger.info(
                "… [ctx.log: more than %d lines in one call; the rest of this call's "
                "lines are dropped]",
                LOG_LINES_PER_CALL,
            )

    def wall_remaining_ms(self) -> float:
        """What is left of the running call's wall budget; the full budget outside a call."""
        if not self._in_call.locked():
            return float(self.wall_budget_ms)
        spent_ms = (time.monotonic() - self.call_started) * 1000
        return self.wall_budget_ms * self.wall_scale - spent_ms

    def _over_wall_budget(self) -> dict[str, Any] | None:
        if self.wall_remaining_ms() > 0:
            return None
        message = (
            f"the call's wall budget of {self.wall_budget_ms} ms (its CPU and the host "
            "time answering ctx.query together) is spent"
        )
        return {"abort": {"code": SandboxTimeBudgetExceeded.code, "message": message}}

    def answer(self, name: str, args: list[Any]) -> dict[str, Any]:
        """Run a bridge function for the child. Only names in the bridge reach here: the child
        refuses the rest before asking. Past the wall budget, before or after the function,
        the call is aborted: the child fails it whatever the script does with the error."""
        function = self.functions.get(name)
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
        return _answered(name, value)


def _answered(name: str, value: Any) -> dict[str, Any]:
    """The reply carrying a bridge function's value, or the error saying it cannot cross."""
    try:
        encoded = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return {"error": f"ctx.{name} answered a value that is not JSON"}
    except RecursionError:
        return {"error": too_deep(f"the value ctx.{name} answered")}
    if not json_nests_within(encoded) and nesting_exceeds(value):
        return {"error": too_deep(f"the value ctx.{name} answered")}
    return {"ok": value}
