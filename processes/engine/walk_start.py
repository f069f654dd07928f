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


def first_step_ahead(
    run: ProcessRun,
    plan: list[PlannedStep],
    ctx_of: CtxOf,
    call_ahead: Callable[[tuple, dict], bool],
) -> None:
    """For a chain whose claim found its ledger empty (its walk starts at the first step, with
    no earlier outcomes) and no cancel pending: start the first step's functions (a create, an
    update or a delete: ``step_functions``) with the ctx ``ctx_of`` gives it, in the order the
    step calls them, as many as the sandbox takes ahead."""
    if not plan or not ledger_seen_empty(run) or run.cancel_requested:
        return
    planned = plan[0]
    paths = step_functions(planned)
    if not paths:
        return
    ctx = ctx_of(planned, {}, None)
    for path in paths:
        if not call_ahead(planned.path + path, ctx):
            return
