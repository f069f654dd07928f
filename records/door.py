"""The records door: the one context in which a record, its write state or its trail is written.

The door is three modules: ``records.boundary`` (create, update, delete, settle),
``records.verdicts`` (a source's verdict, a held delete decided) and ``records.trail`` (the trail
row every decision writes) — plus ``records.releases``, which empties the owner or group of the
records of a user or group being deleted. Their public services are wrapped in ``door_opened``;
everywhere else the default manager (``objects``) of ``Record``, ``RecordWriteState`` and
``WriteTrail`` refuses every ORM write path — ``create``, ``save``, ``update``, ``delete``,
``bulk_create``, ``bulk_update``, ``get_or_create``, ``update_or_create`` — with ``DoorClosed``.
Reads use ``.reads``, a manager that cannot write even inside the door, so ``grep door_open``
finds every way in.

Why a context variable rather than a flag argument or a module check: the boundary calls hooks,
guardrails and the sources room while it holds the door, and a context variable follows the
call stack (and ``sync_to_async``) without threading a token through every signature; a caller
outside the door cannot open it by accident, only by naming ``door_open`` — which tests that
build fixtures may do, visibly.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from django.db import models

F = TypeVar("F", bound=Callable[..., Any])

_depth: ContextVar[int] = ContextVar("records_door_depth", default=0)

WRITE_METHODS = (
    "create",
    "update",
    "delete",
    "bulk_create",
    "bulk_update",
    "get_or_create",
    "update_or_create",
)


class DoorClosed(RuntimeError):
    """A record, write state or trail row was written outside the records door."""


@contextmanager
def door_open() -> Iterator[None]:
    """Let the ORM write records for the duration of the block (the door's own modules only)."""
    token = _depth.set(_depth.get() + 1)
    try:
        yield
    finally:
        _depth.reset(token)


def door_opened(func: F) -> F:
    """Decorate a door service: its writes (and the writes of what it calls) are allowed."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with door_open():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def is_door_open() -> bool:
    return _depth.get() > 0


def _refuse(model: type[models.Model], what: str) -> None:
    raise DoorClosed(
        f"{model.__name__}: {what} outside the records door; write through records.boundary "
        "(records/door.py lists the door's modules)"
    )


def _guarded(name: str) -> Callable[..., Any]:
    def method(self: models.QuerySet, *args: Any, **kwargs: Any) -> Any:
        if not is_door_open():
            _refuse(self.model, f"objects.{name}()")
        return getattr(super(GuardedQuerySet, self), name)(*args, **kwargs)

    method.__name__ = name
    return method


def _read_only(name: str) -> Callable[..., Any]:
    def method(self: models.QuerySet, *args: Any, **kwargs: Any) -> Any:
        raise DoorClosed(
            f"{self.model.__name__}.reads cannot {name}(): it is the read-only manager"
        )

    method.__name__ = name
    return method


class GuardedQuerySet(models.QuerySet):
    """Reads anywhere; writes only while the door is open."""


class ReadOnlyQuerySet(models.QuerySet):
    """Reads only, whatever the context."""


for _name in WRITE_METHODS:
    setattr(GuardedQuerySet, _name, _guarded(_name))
    setattr(ReadOnlyQuerySet, _name, _read_only(_name))

GuardedManager = models.Manager.from_queryset(GuardedQuerySet)
ReadManager = models.Manager.from_queryset(ReadOnlyQuerySet)


class DoorGuarded(models.Model):
    """Abstract base: ``save()`` and ``delete()`` refuse outside the door, like the managers."""

    objects = GuardedManager()
    reads = ReadManager()

    class Meta:
        abstract = True
        base_manager_name = "reads"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not is_door_open():
            _refuse(type(self), "save()")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        if not is_door_open():
            _refuse(type(self), "delete()")
        return super().delete(*args, **kwargs)
