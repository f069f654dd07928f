"""The answers of the run steering routes (cancel, rollback, resume, retry, redirect) and their
shapes for the OpenAPI schema (checked against real answers in tests/turbobase/test_openapi.py)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from processes.models import LinkHow, ProcessRun, RunState


def cancel_answer(run: ProcessRun) -> dict[str, Any]:
    """``POST /v1/processes/runs/:runId/cancel``: a run told to stop reads ``cancelled`` now — the
    cancel is decided — though a working one stops at its next boundary; an ended run, its state."""
    return {
        "runId": str(run.run_id),
        "state": RunState.CANCELLED if run.cancel_requested else run.state,
    }


def retry_answer(new: ProcessRun) -> dict[str, Any]:
    """``POST .../retry`` and ``.../redirect``: the new run, and the old one it came from."""
    key = "retryOf" if new.linked_how == LinkHow.RETRY else "redirectOf"
    return {"runId": str(new.run_id), key: str(new.linked_from_id)}


def steering_answer(run: ProcessRun, *, is_queued: bool | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"runId": str(run.run_id), "state": run.state}
    if is_queued is not None:
        body["queued"] = is_queued
    return body


class CancelledOut(serializers.Serializer):
    cancelled = serializers.IntegerField(help_text="How many queued runs were cancelled.")


class RetryOut(serializers.Serializer):
    runId = serializers.UUIDField(help_text="The new run.")
    retryOf = serializers.UUIDField(help_text="The run it retries.")


class RedirectOut(serializers.Serializer):
    runId = serializers.UUIDField(help_text="The new run.")
    redirectOf = serializers.UUIDField(
        help_text="The run it replaces, cancelled unless it had ended."
    )


class SteeringOut(serializers.Serializer):
    runId = serializers.UUIDField()
    state = serializers.ChoiceField(choices=RunState.choices)
    queued = serializers.BooleanField(required=False, help_text="Rollback and resume only.")
