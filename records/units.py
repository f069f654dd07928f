"""A write's transaction and its refusal: the savepoint a boundary write runs in, or the caller's
``WriteUnit`` (a process step's transaction) in which it opens none; a refusal's ``refused`` trail
row is written once what it refused was rolled back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal

from django.db import transaction

from kernel.errors import Refusal
from records.door import door_opened
from records.models import (
    TrailAction,
    TrailOutcome,
)
from records.trail import Actor, trail_write


class WriteUnit:
    """A transaction the caller owns around boundary writes and its own rows (a process step: the
    write and its ledger row). Inside it a write opens no savepoint: a refusal rolls the whole unit
    back, and the refused trail row waits here until the caller, in a fresh transaction, records
    the failure (``refusals_trail``). A success costs no SAVEPOINT / RELEASE round trips."""

    def __init__(self) -> None:
        self.refusals: list[dict[str, Any]] = []

    @door_opened
    def refusals_trail(self) -> None:
        """Write the refused trail rows the rolled-back unit kept (call in the fresh transaction)."""
        for row in self.refusals:
            trail_write(**row)
        self.refusals.clear()


unit_current: ContextVar[WriteUnit | None] = ContextVar("records_write_unit", default=None)


@contextmanager
def write_unit() -> Iterator[WriteUnit]:
    """``transaction.atomic()`` as a ``WriteUnit``: the boundary's writes inside share it whole."""
    unit = WriteUnit()
    token = unit_current.set(unit)
    try:
        with transaction.atomic():
            yield unit
    finally:
        unit_current.reset(token)


class Refusing:
    """``refusing``'s guard (one class, not one made per write)."""

    def __init__(self, actor: Actor, action: TrailAction, record_type: str, pg_row_id: Any) -> None:
        self.actor, self.action, self.record_type, self.pg_row_id = (
            actor,
            action,
            record_type,
            pg_row_id,
        )

    def __enter__(self) -> Refusing:
        self.unit = unit_current.get()
        self.atomic = transaction.atomic() if self.unit is None else None
        if self.atomic is not None:
            self.atomic.__enter__()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Literal[False]:
        if self.atomic is not None:
            self.atomic.__exit__(exc_type, exc, tb)
        if isinstance(exc, Refusal):
            row = dict(
                actor=self.actor,
                action=self.action,
                record_type=self.record_type,
                outcome=TrailOutcome.REFUSED,
                pg_row_id=self.pg_row_id,
                code=exc.code,
                field=exc.field,
                message=exc.message,
            )
            if self.unit is None:
                trail_write(**row)
            else:
                self.unit.refusals.append(row)
        return False


def refusing(
    actor: Actor, action: TrailAction, record_type: str, pg_row_id: Any = None
) -> Refusing:
    """Run the write in a savepoint; on refusal, trail it and re-raise. Inside a ``WriteUnit`` no
    savepoint: the refusal's trail row is kept on the unit, written once the unit rolled back."""
    return Refusing(actor, action, record_type, pg_row_id)
