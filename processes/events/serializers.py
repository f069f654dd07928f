"""The bodies of ``POST /v1/events``, and an event as a ``waitFor`` step hands it to ``ctx``."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from processes.events.models import Event
from processes.events.service import EventSent


def when(value: Any) -> str:
    return serializers.DateTimeField().to_representation(value)


def event_out(event: Event) -> dict[str, Any]:
    """An event as ``ctx.steps[id].event`` carries it."""
    return {
        "eventId": str(event.event_id),
        "name": event.name,
        "data": event.data,
        "key": event.key,
        "receivedAt": when(event.received_at),
    }


def event_sent_out(sent: EventSent) -> dict[str, Any]:
    return {
        "eventId": str(sent.event.event_id),
        "name": sent.event.name,
        "runs": [
            {"runId": str(run.run_id), "processId": run.process_id, "state": run.state}
            for run in sent.runs
        ],
        "resumed": sent.resumed,
        "replayed": sent.replayed,
    }


# --- for the schema ---------------------------------------------------------------------------


class EventIn(serializers.Serializer):
    name = serializers.CharField(help_text="'order.paid': letters, digits and . _ : / -")
    # The body names it data, as Serializer names its output: only the schema reads this class.
    data = serializers.JSONField(  # type: ignore[assignment]
        required=False, help_text="A JSON object (default {})."
    )
    key = serializers.CharField(
        required=False,
        help_text="Idempotency: the same key again (from the same sender) is the same event.",
    )


class EventRunOut(serializers.Serializer):
    runId = serializers.UUIDField()
    processId = serializers.CharField()
    state = serializers.CharField()


class EventSentOut(serializers.Serializer):
    eventId = serializers.UUIDField()
    name = serializers.CharField()
    runs = EventRunOut(many=True, help_text="The runs its triggers started.")
    resumed = serializers.IntegerField(help_text="The waitFor steps it resumed.")
    replayed = serializers.BooleanField(
        help_text="The key was sent before: this is that event, nothing new started or resumed."
    )
