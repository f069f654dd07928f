"""django-q2 task entry points of the sources room (``sources.tasks.<name>`` in the queue)."""

from __future__ import annotations

from sources.outbound import outbound_drain, outbound_sweep


def outbound_drain_task(record_type: str) -> dict:
    """Drain one record type's lane (queued on every committed write, by retries and by the sweep)."""
    return outbound_drain(record_type=record_type).as_dict()


def outbound_sweep_task() -> list[str]:
    """The ``system.sources.sweep`` schedule: wake any lane with due work and nobody draining it."""
    return outbound_sweep()
