"""A per-process cache of a small policy table, re-read at most once a second.

Policy rows (settings, rules) are read on every write and every step; an operator's change
reaches every worker within the TTL, and an in-process change clears the cache at once (the
model signals below, and after commit so a rolled-back change is forgotten too).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from django.db import transaction

T = TypeVar("T")
TTL_S = 1.0


class TableCache(Generic[T]):
    def __init__(self, load: Callable[[], T], ttl_s: float = TTL_S) -> None:
        self._load, self._ttl_s = load, ttl_s
        self._lock = threading.Lock()
        self._entry: tuple[float, T] | None = None

    def get(self) -> T:
        now = time.monotonic()
        with self._lock:
            entry = self._entry
        if entry is not None and now - entry[0] < self._ttl_s:
            return entry[1]
        value = self._load()
        with self._lock:
            self._entry = (now, value)
        return value

    def clear(self, *args: object, **kwargs: object) -> None:
        with self._lock:
            self._entry = None

    def clear_now_and_after_commit(self, *args: object, **kwargs: object) -> None:
        self.clear()
        transaction.on_commit(self.clear)
