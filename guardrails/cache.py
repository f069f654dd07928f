"""A per-process cache of a small policy table, re-read at most once a second.

Policy rows (settings, rules) are read on every write and every step; an operator's change
reaches every worker within the TTL, and an in-process change clears the cache at once (the
model signals below, and after commit so a rolled-back change is forgotten too).

A cache built with ``fresh_per_boundary`` also reads its writes across processes: the start of
every HTTP request and of every worker task is a *boundary* (``cache_boundary``), and an entry
loaded before the latest boundary is not served after it. So the first read after a request or a
delivery begins re-reads the table — one small query, and only if that request or delivery reads
the cache at all — and every later read in it is served from memory until the TTL. A write that
committed before the boundary (another process's 200 PATCH) is therefore seen: the load began
after the boundary, and its query's snapshot is newer still.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from django.db import transaction

T = TypeVar("T")
TTL_S = 1.0

_boundary_lock = threading.Lock()
_boundary = 0.0  # time.monotonic() of the latest request or task start in this process


def cache_boundary(*args: object, **kwargs: object) -> None:
    """A request or a worker task begins: reads from now on see every write committed before it.

    A signal receiver (``request_started``, django-q2's ``pre_execute``); costs no query.
    """
    global _boundary
    now = time.monotonic()
    with _boundary_lock:  # max(): two threads' boundaries never move it backwards
        _boundary = max(_boundary, now)


class TableCache(Generic[T]):
    def __init__(
        self, load: Callable[[], T], ttl_s: float = TTL_S, *, fresh_per_boundary: bool = False
    ) -> None:
        self._load, self._ttl_s, self._fresh = load, ttl_s, fresh_per_boundary
        self._lock = threading.Lock()
        self._entry: tuple[float, T] | None = None  # (when its load began, the rows)
        self._floor = 0.0  # an entry whose load began before this (a clear) is never served

    def get(self) -> T:
        now = time.monotonic()
        with self._lock:
            entry, floor = self._entry, self._floor
        if self._fresh:
            floor = max(floor, _boundary)
        # Strictly after the floor: a load that began at the very instant of a clear may predate it.
        if entry is not None and entry[0] > floor and now - entry[0] < self._ttl_s:
            return entry[1]
        began = time.monotonic()  # before the query, so the rows are at least this new
        value = self._load()
        with self._lock:
            if self._entry is None or self._entry[0] < began:  # never replace a newer load
                self._entry = (began, value)
        return value

    def clear(self, *args: object, **kwargs: object) -> None:
        """Serve nothing loaded before now (a load in flight on another thread included)."""
        with self._lock:
            self._entry, self._floor = None, time.monotonic()

    def clear_now_and_after_commit(self, *args: object, **kwargs: object) -> None:
        self.clear()
        transaction.on_commit(self.clear)
