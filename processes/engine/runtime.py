"""The author's module for one slice: one sandbox, loaded once with the version the run pinned.

Calls return JSON or raise ``StepCodeFailed`` carrying the code to put on the ledger: the
sandbox's own (timeout, memory, script error) or, when a ``ctx.query`` read was refused inside the
call, that read's code and sentence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from extensions.pool import sandbox_pooled
from extensions.sandbox import SandboxError, SandboxLimits, SandboxTimeBudgetExceeded
from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from kernel.text import CODE_MAX_CHARS, MESSAGE_MAX_CHARS, text_clean
from processes.engine.query import query_reader, query_run


class StepCodeFailed(Exception):
    """The author's function failed; ``code``/``message`` go on the step's ledger row."""

    def __init__(self, code: str, message: str) -> None:
        # The author's words (a thrown Error) go on the ledger: bounded and storable (kernel.text).
        code, message = text_clean(code, CODE_MAX_CHARS), text_clean(message, MESSAGE_MAX_CHARS)
        super().__init__(message)
        self.code, self.message = code, message


class ModuleRuntime:
    """The pinned module in one sandbox, with ``ctx.query`` bound to the invoking user."""

    def __init__(self, *, process_id: str, version: int, user_id: int, fingerprint: str) -> None:
        self._user_id, self._fingerprint = user_id, fingerprint
        # The invoker as ``query_reader`` let them read, checked at this delivery's first read
        # and kept for its others: one check a delivery, not two statements a read. A run's
        # invoker is fixed when it is invoked and this runtime lives for one delivery (one claim
        # of the run); what can change meanwhile is the invoker's access (groups, staff, active).
        # A change made during a delivery is refused from the next delivery's first read on —
        # the delivery under way was already reading with the access it started with, as a read
        # made just before the change was.
        self._reader: Any = None
        self._query_failure: Exception | None = None
        # Run before every ctx.query read (the delivery writes its waiting steps first). What it
        # raises is the engine's, not the read's: it stops the call and surfaces as itself.
        self.before_read: Callable[[], None] | None = None
        self._interrupted: Exception | None = None
        # One call's wall time, ctx.query included, is bounded by the step budget: a loop of
        # reads stops by name instead of holding the step (and its lease) for minutes.
        limits = SandboxLimits(
            slice_budget_ms=max(60_000, setting_get(SettingKey.PROCESSES_SLICE_MAX_MS)),
            wall_budget_ms=setting_get(SettingKey.PROCESSES_STEP_TIME_BUDGET_MS),
        )
        # A warm interpreter (extensions.pool); a fresh budget and JS context for this delivery.
        self.sandbox = sandbox_pooled(module_id=process_id, version=version, limits=limits)
        self.sandbox.slice_start()
        self.sandbox.new_run(bridge={"query": self._query})

    def _query(self, path_and_query: Any) -> list[dict[str, Any]]:
        if self.before_read is not None:
            try:
                self.before_read()
            except Exception as exc:
                self._interrupted = exc
                raise
        try:
            if self._reader is None:
                self._reader = query_reader(self._user_id, self._fingerprint)
            return query_run(
                user=self._reader,
                path_and_query=path_and_query,
                budget_ms=self.sandbox.wall_remaining_ms(),
            )
        except Exception as exc:
            self._query_failure = exc
            raise

    def call(self, path: tuple, ctx: dict[str, Any] | None, *args: Any) -> Any:
        """Call the function at ``path`` with ``ctx`` (and extra args); JSON back."""
        self._query_failure = self._interrupted = None
        try:
            if ctx is None:
                value = self.sandbox.call(list(path), list(args))
            else:
                value = self.sandbox.call(list(path), list(args), ctx=ctx)
        except SandboxError as exc:
            if self._interrupted is not None:
                raise self._interrupted from exc
            failure = self._query_failure
            # A read cut short by the step's time budget fails as the budget, not as the read.
            if (
                failure is not None
                and getattr(failure, "code", None)
                and not isinstance(exc, SandboxTimeBudgetExceeded)
            ):
                raise StepCodeFailed(
                    str(failure.code), getattr(failure, "message", str(failure))
                ) from exc
            where = f" at {exc.location}" if getattr(exc, "location", None) else ""
            raise StepCodeFailed(exc.code, f"{exc}{where}") from exc
        if self._interrupted is not None:  # the function caught the read's failure: still stop
            raise self._interrupted
        return value

    def call_ahead(self, path: tuple, ctx: dict[str, Any]) -> bool:
        """Start ``call(path, ctx)`` now, to be taken by that call later (``Sandbox.call_ahead``):
        the next step's first function runs while this step's transaction commits."""
        return self.sandbox.call_ahead(list(path), [], ctx=ctx)

    def call_each(self, path: tuple, ctxs: list[dict[str, Any]]) -> list[Any]:
        """The values of ``path`` for the leading ``ctxs`` whose calls settled at once, in one
        exchange with the sandbox; empty when the exchange as a whole failed. The caller makes the
        rest with ``call``, one at a time — where a failure is classified and recorded."""
        try:
            return self.sandbox.call_each(list(path), ctxs)
        except SandboxError:
            return []

    def call_each_ahead(self, parts: list[tuple[tuple, list[dict[str, Any]]]]) -> bool:
        """Start ``call_each`` of each of ``parts`` now, to be taken by those calls later
        (``Sandbox.call_each_ahead``): a migration's next batch is built while this one writes."""
        return self.sandbox.call_each_ahead([(list(path), ctxs) for path, ctxs in parts])

    def close(self) -> None:
        """Hand the interpreter back to the pool (the next delivery starts a fresh context)."""
