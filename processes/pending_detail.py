"""A run's ``pendingDetail``: what an ``awaitingSource`` run waits on (``docs/pacing.md``)."""

from __future__ import annotations

from rest_framework import serializers

from processes.engine.waits import source_wait_detail
from processes.models import PendingReason, ProcessRun


class PendingDetailOut(serializers.Serializer):
    """Why an ``awaitingSource`` run waits: the source, and until when it is paced (or null)."""

    # The metaclass takes declared fields off the class, so this does not shadow Field.source.
    source = serializers.CharField()  # type: ignore[assignment]
    pacedUntil = serializers.DateTimeField(allow_null=True)


def pending_detail(run: ProcessRun) -> dict[str, str | None] | None:
    """``{source, pacedUntil}`` while the run is ``awaitingSource``; None otherwise."""
    if run.is_terminal or run.pending_reason != PendingReason.AWAITING_SOURCE:
        return None
    return source_wait_detail(run.pk)
