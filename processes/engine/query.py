"""``ctx.query``: a GET-only PostgREST read as the invoking user, bounded three ways.

The whole result or a named failure at the byte ceiling; a per-read time ceiling; and a small pool
of read slots shared by every run on this worker process, with a wait bound several times longer
than an app request's. Each bound names itself when it stops a step. The invoker's access is
checked again at each delivery's first read (``query_reader``; ``engine.runtime`` keeps it for
the delivery), so a run whose invoker lost access stops reading from its next delivery on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from django.contrib.auth import get_user_model
from django.db import connection, transaction

from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from kernel.errors import TurbobaseError
from processes.codes import ProcessCode, ProcessError
from records.rest.execute import rest_read
from records.rest.timed import rest_read_timed

T = TypeVar("T")

_slots_lock = threading.Lock()
_slots: threading.BoundedSemaphore | None = None
_slots_size = 0


class QueryRefused(TurbobaseError):
    """A ctx.query read was refused."""

    error = ProcessError.QUERY_REFUSED
    code: str = ProcessCode.QUERY_REFUSED

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code


def _slot_pool() -> threading.BoundedSemaphore:
    global _slots, _slots_size
    size = max(1, setting_get(SettingKey.PROCESSES_QUERY_SLOTS))
    with _slots_lock:
        if _slots is None or size != _slots_size:
            _slots, _slots_size = threading.BoundedSemaphore(size), size
        return _slots


@contextmanager
def _read_deadline(timeout_ms: int) -> Iterator[None]:
    """Abandon the read at the per-read ceiling: PostgreSQL's statement_timeout, SQLite's progress handler."""
    if connection.vendor == "postgresql":
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL statement_timeout = %s", [int(timeout_ms)])
            yield
        return
    connection.ensure_connection()
    raw = connection.connection
    deadline = time.monotonic() + timeout_ms / 1000
    raw.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)
    try:
        yield
    finally:
        raw.set_progress_handler(None, 0)


def query_run(
    *, user: Any, path_and_query: Any, budget_ms: float | None = None
) -> list[dict[str, Any]]:
    """One ``ctx.query`` read as ``user`` — the invoker, as ``query_reader`` let them read. Raises
    ``QueryRefused`` naming the bound or rule that stopped it, or the read's own refusal (the code
    and message ``GET /v1/rest`` answers for it).

    ``budget_ms`` is what is left of the step's time budget: the slot wait and the read are
    bounded by it too, so a read cannot carry a step past its budget.

    On PostgreSQL outside a transaction (a lane worker), the read and its time ceiling are one
    statement (``records.rest.timed``); elsewhere the read runs under ``_read_deadline``.
    """
    path = _path_checked(path_and_query)

    def read(max_bytes: int, timeout_ms: int) -> list[dict[str, Any]]:
        if connection.vendor == "postgresql" and connection.get_autocommit():
            return rest_read_timed(
                user=user, path_and_query=path, max_bytes=max_bytes, timeout_ms=timeout_ms
            )
        with _read_deadline(timeout_ms):
            return rest_read(user=user, path_and_query=path, max_bytes=max_bytes)

    return _slotted(read, budget_ms=budget_ms)


def query_bounded(
    read: Callable[[Any, int], T], *, user_id: int, fingerprint: str, budget_ms: float | None = None
) -> T:
    """``read(user, max_bytes)`` as the invoking user under ``ctx.query``'s bounds (the access
    check, a read slot, the time ceiling, the byte ceiling), refusals named as ``query_run``'s."""
    user = query_reader(user_id, fingerprint)

    def bounded(max_bytes: int, timeout_ms: int) -> T:
        with _read_deadline(timeout_ms):
            return read(user, max_bytes)

    return _slotted(bounded, budget_ms=budget_ms)


def _slotted(read: Callable[[int, int], T], *, budget_ms: float | None) -> T:
    """``read(max_bytes, timeout_ms)`` in a read slot, its failures named as ``query_run``'s."""
    slot_wait_ms, wait_bound = _bounded(
        setting_get(SettingKey.PROCESSES_QUERY_SLOT_WAIT_MS),
        SettingKey.PROCESSES_QUERY_SLOT_WAIT_MS,
        budget_ms,
    )
    pool = _slot_pool()
    if not pool.acquire(timeout=slot_wait_ms / 1000):
        raise QueryRefused(
            f"no read slot freed within {wait_bound} ({slot_wait_ms} ms); the read was not sent",
            code=ProcessCode.QUERY_SLOT_TIMEOUT,
        )
    timeout_ms, timeout_bound = _bounded(
        setting_get(SettingKey.PROCESSES_QUERY_TIMEOUT_MS),
        SettingKey.PROCESSES_QUERY_TIMEOUT_MS,
        budget_ms,
    )
    try:
        return read(setting_get(SettingKey.PROCESSES_QUERY_MAX_BYTES), timeout_ms)
    except TurbobaseError as exc:
        # What GET /v1/rest answers this user for the same read, so the author learns why:
        # a refusal carries its own code; a NotFound (an unknown resource) is named by its error.
        if getattr(exc, "code", None):
            raise
        raise QueryRefused(exc.message, code=exc.error) from exc
    except Exception as exc:
        if _is_timeout(exc):
            raise QueryRefused(
                f"the read passed {timeout_bound} ({timeout_ms} ms) and was abandoned",
                code=ProcessCode.QUERY_TIMEOUT,
            ) from exc
        raise
    finally:
        pool.release()


def _path_checked(path_and_query: Any) -> str:
    """The read's ``resource?query`` (no leading ``/``), or ``QueryRefused`` when it is not one."""
    if not isinstance(path_and_query, str) or not path_and_query.strip():
        raise QueryRefused(
            "ctx.query takes a PostgREST path and query string", code=ProcessCode.QUERY_INVALID
        )
    return path_and_query.lstrip("/")


def query_reader(user_id: int, fingerprint: str) -> Any:
    """The invoking user, refused (``QUERY_ACCESS_CHANGED``) when their access changed since the
    run was invoked: two statements (the user, their groups)."""
    from processes.invoke import access_fingerprint

    user = get_user_model().objects.filter(pk=user_id).first()
    if (
        user is None
        or not user.is_active
        or (fingerprint and access_fingerprint(user) != fingerprint)
    ):
        raise QueryRefused(
            "the invoking user's access changed while the run was going; its reads are refused",
            code=ProcessCode.QUERY_ACCESS_CHANGED,
        )
    return user


def _bounded(setting_ms: int, name: str, budget_ms: float | None) -> tuple[int, str]:
    """The smaller of a setting and the step's remaining budget, with the name of the one that binds."""
    if budget_ms is not None and budget_ms < setting_ms:
        return max(1, int(budget_ms)), "what was left of processes.step_time_budget_ms"
    return setting_ms, name


def _is_timeout(exc: Exception) -> bool:
    text = str(exc).lower()
    return "statement timeout" in text or "canceling statement" in text or "interrupted" in text
