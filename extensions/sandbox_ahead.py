"""The calls a ``Sandbox`` sends its child ahead of time, to be taken by the same calls later:
one call (``call_ahead``, a chain's next step) or a migration's next batch (``call_each_ahead``).
The child computes while the caller does other work; any other request drops what is ahead, its
``ctx.query`` refused. ``Sandbox`` is the only class built on ``AheadCalls``."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from extensions.child_process import ChildExited, ChildOverrun, ChildProcess
from extensions.sandbox_bridge import BridgeHost
from extensions.sandbox_errors import SandboxError
from extensions.sandbox_messages import (
    Ahead,
    EachAhead,
    Path_,
    ahead_dropped,
    ahead_key,
    budgeted,
    call_message,
    each_message,
    message_encoded,
    too_deep_in,
)
from extensions.value_depth import nesting_exceeds

WALL_FACTOR = 3.0
WALL_GRACE_S = 2.0
# Calls that may be ahead at once (``call_ahead``, ``calls_ahead``): a chain's next steps, so
# the child builds the steps after the next while the caller takes the next one. Sent several in
# one request, they wake the child once: under load each wake-up costs a scheduling delay.
AHEAD_MAX = 8


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


class AheadCalls:
    """What ``Sandbox`` sends ahead, and how a later call takes it or drops it."""

    if TYPE_CHECKING:  # the Sandbox's own, set in its __init__
        limits: SandboxLimits
        _entry: str | None
        _ahead: list[Ahead]
        _each: EachAhead | None
        _lock: threading.Lock
        _host: BridgeHost
        _child: ChildProcess | None
        _cpu_used_ms: float

        def _request(
            self,
            message: dict[str, Any],
            *,
            budget_ms: int | None,
            is_budgeted: bool = True,
            ahead: Ahead | None = None,
            encoded: str | None = None,
        ) -> Any: ...

        def _budget(self, budget_ms: int | None) -> int: ...

        def _ready_child(self) -> ChildProcess: ...

        def _discard_child(self) -> None: ...

        def _error(self, error: Mapping[str, Any]) -> SandboxError: ...

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
        return self.calls_ahead([(path, args, ctx)], budget_ms=budget_ms) == 1

    def calls_ahead(
        self,
        calls: Sequence[tuple[Path_, Sequence[Any], Mapping[str, Any] | None]],
        *,
        budget_ms: int | None = None,
    ) -> int:
        """``call_ahead`` of each of ``calls`` (path, args, ctx), in order, sent to the child in
        one write; each is still its own call, its own reply, taken or dropped as one sent
        alone. Answers how many were sent: the leading calls that fit in ``AHEAD_MAX`` before
        the first that cannot go (not JSON, too deep)."""
        room = AHEAD_MAX - len(self._ahead)
        if self._entry is None or room <= 0:
            return 0
        requests: list[tuple[str, str]] = []
        for path, args, ctx in calls[:room]:
            encoded = message_encoded(call_message(path, args, ctx))
            if encoded is None or too_deep_in(ctx, args, encoded) is not None:
                break  # not JSON or too deep: the call itself says so
            # The request is the message with its budget: one encoding serves as the key too.
            requests.append((encoded, ahead_key(encoded, budget_ms)))
        return len(self._sent_ahead(requests, budget_ms)) if requests else 0

    def call_each_ahead(self, parts: Sequence[tuple[Path_, Sequence[Mapping[str, Any]]]]) -> bool:
        """Start ``call_each(path, ctxs)`` for each of ``parts``, in order, in one request, and
        return at once: the child computes a migration's next batch while the caller writes this
        one. The next ``call_each`` calls with the same path and ctxs, in the same order, take
        their values from its reply (read when the first is made: a ``ctx.query`` is answered
        then, so it reads what the caller committed in between); any other request drops it.
        Best effort, as ``call_ahead``: sent only when nothing else is ahead (the child reads it
        whole at once); answers whether it was sent."""
        if self._entry is None or self._ahead or not parts:
            return False
        messages = [each_message(path, ctxs) for path, ctxs in parts]
        encoded = [message_encoded(m) for m in messages]
        if any(e is None for e in encoded) or any(
            nesting_exceeds(c) for m in messages for c in m["ctxs"]
        ):
            return False  # not JSON, or too deep: each call says so itself
        count = sum(len(m["ctxs"]) for m in messages)
        request = '{"op": "call_each_many", "calls": [' + ", ".join(encoded) + "]}"  # type: ignore[arg-type]
        sent = self._sent_ahead(
            [(request, ahead_key(request, None))], self.limits.call_budget_ms * count
        )
        if not sent:
            return False
        self._each = EachAhead(sent[0], [e for e in encoded if e is not None], count)
        return True

    def _sent_ahead(
        self, requests: Sequence[tuple[str, str]], budget_ms: int | None
    ) -> list[Ahead]:
        """Send ``requests`` (each an encoded message and its key) with their budget, in one
        write (JSON lines: an encoded message holds no newline), and remember them as ahead;
        empty when they could not go, and then nothing was sent (the later call itself says
        why: no budget left, the modules did not load, the child gone)."""
        if not self._lock.acquire(blocking=False):
            return []
        try:
            budget = self._budget(budget_ms)
            lines = "\n".join(budgeted(request, budget) for request, _ in requests)
            self._ready_child().send_encoded(lines)
            sent = [Ahead(key, budget) for _, key in requests]
            self._ahead.extend(sent)
            return sent
        except ChildExited:
            self._discard_child()
            return []
        except (TypeError, ValueError, SandboxError):  # not JSON, no budget, modules not loaded
            return []
        finally:
            self._lock.release()

    def _each_answered(self, encoded: str | None) -> list[Any] | None:
        """The values of ``encoded`` (a ``call_each`` message) when it is the next part of the
        ``call_each_ahead`` in hand (its reply read now if it was not); None otherwise (the
        request about to be sent drops what is ahead)."""
        each, self._each = self._each, None
        if each is None or encoded is None or each.parts[each.taken] != encoded:
            return None
        if each.outcomes is None:
            if not self._ahead or self._ahead[0] is not each.ahead:
                return None
            self._host.wall_scale = each.count
            try:
                each.outcomes = self._request(
                    {"op": "call_each_many"}, budget_ms=None, ahead=each.ahead
                )
            finally:
                self._host.wall_scale = 1
        outcome = each.outcomes[each.taken]
        each.taken += 1
        if each.taken < len(each.outcomes):
            self._each = each
        if "error" in outcome:
            raise self._error(outcome["error"])
        return list(outcome["ok"])

    def _ahead_of(self, encoded: str | None, budget_ms: int | None) -> Ahead | None:
        """The first call sent ahead if ``encoded`` (a call's message, ``message_encoded``) is that
        call, else None (only the first one's reply is next in the pipe)."""
        if not self._ahead or encoded is None:
            return None
        first = self._ahead[0]
        return first if ahead_key(encoded, budget_ms) == first.key else None

    def _ahead_settle(self, taken: Ahead | None) -> Ahead | None:
        """``taken`` if it is the first call sent ahead (its reply is next in the pipe; the
        others stay ahead); else every call ahead has its reply read and dropped (its
        ``ctx.query`` refused) so the pipe is clear."""
        if taken is not None and self._ahead and self._ahead[0] is taken:
            del self._ahead[0]
            return taken
        ahead, self._ahead, self._each = self._ahead, [], None
        for dropped in ahead:
            if self._child is None:
                break
            try:
                reply = self._child.receive(
                    dropped.budget / 1000 * WALL_FACTOR + WALL_GRACE_S, ahead_dropped
                )
                self._cpu_used_ms += reply.get("cpu_ms", 0.0)
            except ChildOverrun:
                self._discard_child()
                self._cpu_used_ms += dropped.budget
            except ChildExited:
                self._discard_child()
        return None
