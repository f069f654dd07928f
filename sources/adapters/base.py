"""The adapter protocol: how one outbound write reaches a connected system, and what it answered.

An adapter is small on purpose (Django's ``SessionBase``): ``create``, ``update`` and ``delete``
each take one ``OutboundWrite`` and return one ``Outcome``. Four answers exist:

- ``confirmed(external_id)`` — the source applied it (and, for a create, minted this id);
- ``refused(code, field, message)`` — the source said no, in its own words; the write is parked;
- ``transient(message)`` — no answer worth keeping (timeout, 5xx, connection refused); retried;
- ``settle_conflict(external_id, message)`` — the source applied it, but linking its id back failed.

The outbound worker hands an adapter a run of writes of one type at a time (``send_batch``). The
base class sends them one by one through ``send`` and hands each answer back at once, so an
adapter that only has the three per-write methods works unchanged; an adapter that can do better
(a batch endpoint, or the sandbox's one transaction) overrides ``send_batch``.

Adapters translate vendor exceptions at their edge into ``SourceUnavailable`` / ``SourceRefused``
(``raise … from exc``); ``send`` turns those into outcomes so the worker only ever sees an outcome.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from records.catalog import RecordType
from records.codes import RefusalCode
from records.models import WriteOperation
from records.outcomes import VerdictKind
from sources.errors import SourceRefused, SourceSlowDown, SourceUnavailable

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """A source's answer to one write; its kinds are the records room's ``VerdictKind``."""

    kind: VerdictKind
    external_id: str | None = None
    code: str = ""
    field: str = ""
    message: str = ""
    # A transient answer that asks the whole source to slow down (429/503, a timeout), and the
    # seconds it asked for (Retry-After); see ``sources.pacing``.
    slow_down: bool = False
    retry_after: float | None = None

    @property
    def is_final(self) -> bool:
        return self.kind.is_final


def confirmed(external_id: str | None) -> Outcome:
    return Outcome(VerdictKind.CONFIRMED, external_id=external_id)


def refused(code: str, field: str | None, message: str) -> Outcome:
    return Outcome(VerdictKind.REFUSED, code=code, field=field or "", message=message)


def transient(
    message: str, *, slow_down: bool = False, retry_after: float | None = None
) -> Outcome:
    return Outcome(
        VerdictKind.TRANSIENT, message=message, slow_down=slow_down, retry_after=retry_after
    )


def settle_conflict(external_id: str | None, message: str) -> Outcome:
    return Outcome(VerdictKind.SETTLE_CONFLICT, external_id=external_id, message=message)


@dataclass(frozen=True)
class OutboundWrite:
    """Everything an adapter may know about one write: no model instances, no session."""

    write_state_id: int
    operation: WriteOperation
    record_type: RecordType
    source_name: str
    pg_row_id: str
    external_id: str | None  # the record's upstream id (update/delete); None for a create
    parent: dict[str, Any] = field(default_factory=dict)  # the fields this write sends
    lines: list[dict[str, Any]] = field(default_factory=list)

    @property
    def idempotency_key(self) -> str:
        # Stable per write: a write re-sent after a crash can be recognised upstream.
        return f"turbobase-write-{self.write_state_id}"


# Called before the ``index``-th write of a run is sent (the pacing's rate slot).
BeforeEach = Callable[[int], None]
# Takes the answers to the next writes of the run, in order (the worker folds them).
Answered = Callable[[list[Outcome]], None]


class SourceAdapter:
    """Base class of connectors. Subclasses provide ``create``, ``update`` and ``delete``."""

    name: str = ""

    def __init__(self, *, source_name: str, config: dict[str, Any] | None = None) -> None:
        self.source_name = source_name
        self.config = dict(config or {})

    def create(self, write: OutboundWrite) -> Outcome:
        raise NotImplementedError("subclasses of SourceAdapter must provide create()")

    def update(self, write: OutboundWrite) -> Outcome:
        raise NotImplementedError("subclasses of SourceAdapter must provide update()")

    def delete(self, write: OutboundWrite) -> Outcome:
        raise NotImplementedError("subclasses of SourceAdapter must provide delete()")

    def send(self, write: OutboundWrite) -> Outcome:
        """Dispatch one write and always come back with an outcome, whatever the adapter raised."""
        method = {
            WriteOperation.CREATE: self.create,
            WriteOperation.UPDATE: self.update,
            WriteOperation.DELETE: self.delete,
        }.get(write.operation)
        if method is None:
            return refused(
                RefusalCode.SOURCE_REFUSED, "operation", f"unknown operation {write.operation!r}"
            )
        try:
            return method(write)
        except SourceRefused as exc:
            return refused(str(exc.code), exc.field, exc.message)
        except SourceSlowDown as exc:
            return transient(exc.message, slow_down=True, retry_after=exc.retry_after)
        except SourceUnavailable as exc:
            return transient(exc.message)
        except NotImplementedError:
            raise
        except Exception as exc:  # an adapter bug must not wedge the lane: retry, and say why
            logger.exception("adapter %s failed on write #%s", self.name, write.write_state_id)
            return transient(f"{type(exc).__name__}: {exc}")

    def send_batch(
        self, writes: Sequence[OutboundWrite], *, before_each: BeforeEach, answered: Answered
    ) -> int:
        """Send a run of writes of one record type in order, one at a time, calling
        ``before_each(i)`` right before the ``i``-th and handing the answers to ``answered`` in
        order. Stops after the first transient answer (later writes wait behind it). Returns how
        many writes were answered.

        Here each answer is handed back as soon as it is in, so a worker killed mid-run sends
        again only the write it had in hand (with the same idempotency key).
        """
        for index, write in enumerate(writes):
            before_each(index)
            outcome = self.send(write)
            answered([outcome])
            if not outcome.is_final:
                return index + 1
        return len(writes)
