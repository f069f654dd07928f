"""An invoke's ``Idempotency-Key``: a client's retry answers the first run instead of starting one.

The key is the caller's: it is kept on the run as ``invoke:<user pk>:<key>`` in the run's unique
``idempotency_key`` column (the one triggers and schedules key their runs by, under prefixes of
their own), so two callers never share a key and two concurrent requests with one key write one
run — the second's INSERT waits for the first and fails, and it answers the first's run. A key is
kept as long as its run is. The same key with the same process, mode and input answers the first
run (``replayed``); with anything else it is refused, naming the run it was used for.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from processes.errors import InvokeKeyReused
from processes.models import ProcessRun
from records.idempotency import idempotency_key_check

HEADER = "Idempotency-Key"


def invoke_key_read(headers: Any, user: User) -> str | None:
    """The run's stored key for the request's ``Idempotency-Key`` (None without one), or 400."""
    key = idempotency_key_check(headers.get(HEADER), HEADER)
    return None if key is None else f"invoke:{user.pk}:{key}"


def invoke_replayed(*, key: str, process_id: str, mode: str, body: Any) -> ProcessRun | None:
    """The run an earlier invoke with ``key`` started (None: the key is new), or
    ``InvokeKeyReused`` when that invoke asked for something else."""
    run = ProcessRun.objects.filter(idempotency_key=key).first()
    if run is None:
        return None
    if (run.process_id, run.mode, run.input) != (process_id, mode, body):
        raise InvokeKeyReused(
            f"this Idempotency-Key was used for run {run.run_id} of {run.process_id} "
            f"({run.mode}) with another input; send a new key for a new run",
            field=HEADER,
            runId=str(run.run_id),
        )
    return run
