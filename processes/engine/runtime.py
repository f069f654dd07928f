"""The author's module for one slice: one sandbox, loaded once with the version the run pinned.

Calls return JSON or raise ``StepCodeFailed`` carrying the code to put on the ledger: the
sandbox's own (timeout, memory, script error) or, when a ``ctx.query`` read was refused inside the
call, that read's code and sentence.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from extensions.sandbox import Sandbox, SandboxError, SandboxLimits
from guardrails.settings import setting_get
from extensions.store import module_load, module_version
from processes.engine.query import query_run


class StepCodeFailed(Exception):
    """The author's function failed; ``code``/``message`` go on the step's ledger row."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


# One interpreter per (module version, thread) is kept warm between deliveries: spawning the
# sandbox child and evaluating the module costs more than a short chain's steps. Each delivery
# starts a fresh JS context (new_run) and a fresh CPU budget (slice_start), so nothing leaks.
_POOL_SIZE = 8
_pool = threading.local()


def _pooled(process_id: str, version: int, limits: SandboxLimits) -> Sandbox:
    pool: OrderedDict[tuple[str, int, str], Sandbox] = getattr(_pool, "sandboxes", None) or OrderedDict()
    _pool.sandboxes = pool
    # The content hash is in the key: a database restored (or a test rolled back) can reuse a
    # version number for other code, and a pooled interpreter must never serve stale code.
    key = (process_id, version, module_version(process_id, version).sha256)
    sandbox = pool.pop(key, None)
    if sandbox is None or sandbox.limits != limits:
        if sandbox is not None:
            sandbox.close()
        sandbox = Sandbox(limits=limits)
        module_load(sandbox, module_id=process_id, version=version)
    pool[key] = sandbox
    while len(pool) > _POOL_SIZE:
        pool.popitem(last=False)[1].close()
    return sandbox


def pool_close() -> None:
    """End every pooled interpreter of this thread (tests; a worker shutting down)."""
    pool = getattr(_pool, "sandboxes", None) or {}
    for sandbox in pool.values():
        sandbox.close()
    _pool.sandboxes = OrderedDict()


class ModuleRuntime:
    """The pinned module in one sandbox, with ``ctx.query`` bound to the invoking user."""

    def __init__(self, *, process_id: str, version: int, user_id: int, fingerprint: str) -> None:
        self._user_id, self._fingerprint = user_id, fingerprint
        self._query_failure: Exception | None = None
        bridge_ms = setting_get("processes.query_timeout_ms") + setting_get("processes.query_slot_wait_ms")
        limits = SandboxLimits(
            slice_budget_ms=max(60_000, setting_get("PROCESS_SLICE_MAX_MS")),
            bridge_budget_ms=bridge_ms + 5_000,
        )
        self.sandbox = _pooled(process_id, version, limits)
        self.sandbox.slice_start()
        self.sandbox.new_run(bridge={"query": self._query})

    def _query(self, path_and_query: Any) -> list[dict[str, Any]]:
        try:
            return query_run(user_id=self._user_id, fingerprint=self._fingerprint, path_and_query=path_and_query)
        except Exception as exc:
            self._query_failure = exc
            raise

    def call(self, path: tuple, ctx: dict[str, Any], *args: Any) -> Any:
        """Call the function at ``path`` with ``ctx`` (and extra args); JSON back."""
        self._query_failure = None
        try:
            if ctx is None:
                return self.sandbox.call(list(path), list(args))
            return self.sandbox.call(list(path), list(args), ctx=ctx)
        except SandboxError as exc:
            failure = self._query_failure
            if failure is not None and getattr(failure, "code", None):
                raise StepCodeFailed(str(failure.code), getattr(failure, "message", str(failure))) from exc
            where = f" at {exc.location}" if getattr(exc, "location", None) else ""
            raise StepCodeFailed(exc.code, f"{exc}{where}") from exc

    def new_row(self) -> None:
        """A fresh JS context: nothing one row or run set is visible to the next."""
        self.sandbox.new_run()

    def close(self) -> None:
        """Hand the interpreter back to the pool (the next delivery starts a fresh context)."""
