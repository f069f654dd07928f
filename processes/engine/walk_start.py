"""A chain's delivery starting at its first step: that step's functions start in the sandbox at
once, as soon as the plan is known.

Nothing else is ahead as a fresh walk begins (the look-ahead, ``engine.grouping``, starts a
step's functions once the step before it is known), so a delivery's first step would wait for
the sandbox's whole exchange after the walk and the step were set up. Sent with the plan, the
functions compute while the runner sets up the walk (ceilings, stop check) and the step (its
key, its ``StepScope``). The ctx is the one the step will be called with; the sandbox takes a
result only for the same ctx, so a walk that goes otherwise (a stop at its first boundary)
merely drops it.
"""

from __future__ import annotations

from collections.abc import Callable

from processes.engine.grouping import step_functions
from processes.engine.ledger import ledger_seen_empty
from processes.engine.plan import PlannedStep
from processes.models import ProcessRun

CtxOf = Callable[[PlannedStep, dict[str, dict], dict | None], dict]
Send = Callable[[list[tuple[tuple, dict]]], int]


def first_step_ahead(run: ProcessRun, plan: list[PlannedStep], ctx_of: CtxOf, send: Send) -> None:
    """For a chain whose claim found its ledger empty (its walk starts at the first step, with
    no earlier outcomes) and no cancel pending: ``send`` the first step's functions (a create,
    an update or a delete: ``step_functions``) ahead, in the order the step calls them, with the
    ctx ``ctx_of`` gives it (the sandbox takes as many as it can)."""
    if not plan or not ledger_seen_empty(run) or run.cancel_requested:
        return
    planned = plan[0]
    paths = step_functions(planned)
    if paths:
        ctx = ctx_of(planned, {}, None)
        send([(planned.path + path, ctx) for path in paths])
