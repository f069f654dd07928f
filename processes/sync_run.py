"""``?mode=sync``: the run delivered on the request that asked for it, answered when it settles.

The run's row commits first, as an asynchronous invoke writes it but already claimed by the
request: in the same INSERT it is running, leased to the request's token and started, as a
worker's claim would leave it (so no claim UPDATE, no re-read of the row, no ledger count: the
run is new). Then the request's own thread walks its steps, the lease renewed by the same
heartbeat a worker's is: no broker hop, no worker to wake, no poll. If the web process dies
before or during the run the lease runs out and the lane's watch sends the delivery (the row is
noted as sent); it resumes at the first unrecorded step, as after a worker's death.

The budget (``processes.sync_budget_ms``) is checked at every step boundary: past it, the run is
handed back to its lane between two steps (``engine.ending.run_hand_back``) and the answer is the
202 ``sync_budget_exceeded``; a worker goes on from the next step. So the answer comes within the
budget plus the step in flight at most. A run that parks (an awaitSource step, a task) frees the
request the same way; the rest of the budget is spent waiting for it (``processes.settle``).

The request delivers the run only when it can: the run's row is committed (not inside an outer
transaction, where nobody else would see it), the process is a chain (a migration's slices belong
on the async lane's workers), and ``PROCESS_SYNC_IN_REQUEST`` is on (the default; off, the
``tb_sync`` lane's workers run every sync run and the request waits for the settle notice).
The request uses the one connection it holds anyway; the lease heartbeat takes a second one from
the same pool only if the run is still on the request a third of a lease (40 s) after its claim —
past the default budget (30 s), and then only until the step in flight ends.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from django.contrib.auth.models import User
from django.db import connection

from extensions.models import ExtensionModule
from kernel.deployment import is_sync_in_request
from processes.catalog import process_module_get
from processes.engine.lease import Lease
from processes.engine.ledger import ledger_position_empty
from processes.engine.runner import run_deliver
from processes.invoke import run_invoke
from processes.models import ProcessRun, RunMode
from processes.observe import delivery_observed
from processes.settle import run_settle_wait


def sync_in_request(module: ExtensionModule) -> bool:
    """Whether this request may deliver a sync run of the process ``module`` serves itself."""
    if not is_sync_in_request():
        return False
    if connection.in_atomic_block:  # the row would not be committed before its first step
        return False
    return module.definition.get("eachRow") is None


def sync_invoke(
    *,
    process_id: str,
    body: Any,
    user: User,
    budget_ms: int,
    module: ExtensionModule | None = None,
    idempotency_key: str | None = None,
) -> tuple[ProcessRun, ProcessRun | None]:
    """Invoke ``process_id`` and wait up to ``budget_ms``: (the run, the run settled or None).
    ``module``: the served module the caller already read (``process_module_get``)."""
    invoked_at = time.monotonic()  # the invoke reads the process's switch after this
    deadline = invoked_at + budget_ms / 1000
    module = module or process_module_get(process_id)
    here = sync_in_request(module)
    token = uuid.uuid4().hex if here else None
    run = run_invoke(
        process_id=process_id,
        body=body,
        user=user,
        mode=RunMode.SYNC,
        send=not here,
        module=module,
        claimed_by=token,
        idempotency_key=idempotency_key,
    )
    if token is not None:
        # Written claimed by this request: the row in hand is the claim's, its ledger empty.
        lease = Lease(run.pk, token)
        ledger_position_empty(run)
        delivered = delivery_observed(
            run,
            lambda: run_deliver(
                str(run.pk),
                run.delivery,
                hand_back_at=deadline,
                claimed=(run, lease),
                switch_read_at=invoked_at,
            ),
        )
        # Ended by this delivery: the row is what it left (run_end mirrors what it wrote).
        if delivered is not None and delivered.is_terminal:
            return run, delivered
    return run, run_settle_wait(run, deadline=deadline)
