"""Run states: the one table of the moves a run may make, and the checks every move goes through.

Each move names where it may start and where it lands (viewflow's ``@transition(source, target)``):
a delivery claims a run, an operator resumes, redrives or rolls one back, and a run ends committed, failed,
cancelled or rolled back. ``refuse`` starts from nowhere: a triggered or scheduled run whose check
fails before its first step is written ``refused`` and never moves again. Whoever changes
``ProcessRun.state`` asks this table first:

- a change made on a row in hand calls ``move_check`` (an illegal move raises ``IllegalTransition``);
- a change made by one conditional UPDATE (two steerings racing, a claim) filters on
  ``state__in=states_from(move)``, so the database refuses the move from any other state and the
  table stays the single source of which states may make it.

``TRANSITIONS`` (state → the states it may move to) is derived from the moves, for readers and
for ``transition_check``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from processes.errors import IllegalTransition
from processes.models import RunState

S = RunState


class RunMove(StrEnum):
    CLAIM = "claim"  # a delivery takes a queued run, or a running one whose lease is free
    RESUME = "resume"  # a committed run with work outstanding goes back on the queue
    REDRIVE = "redrive"  # a failed run goes back on the queue at the step that failed
    ROLLBACK = "rollback"  # an undo is requested on a stopped run: it runs again, backwards
    COMMIT = "commit"  # the run ends with everything it did kept (possibly with work outstanding)
    FAIL = "fail"  # a step failed; or a rollback delete was refused after the run rolled back
    CANCEL = "cancel"  # stopped on request before it finished
    ROLL_BACK = "roll_back"  # the undo finished: what the run created is gone again
    REFUSE = "refuse"  # a check failed before the first step: the run is born refused, and ends


@dataclass(frozen=True)
class Move:
    sources: frozenset[RunState]
    target: RunState


_STOPPED = frozenset({S.COMMITTED, S.FAILED, S.CANCELLED})
MOVES: dict[RunMove, Move] = {
    RunMove.CLAIM: Move(frozenset({S.QUEUED, S.RUNNING}), S.RUNNING),
    RunMove.RESUME: Move(frozenset({S.COMMITTED}), S.QUEUED),
    RunMove.REDRIVE: Move(frozenset({S.FAILED}), S.QUEUED),
    RunMove.ROLLBACK: Move(_STOPPED, S.RUNNING),
    RunMove.COMMIT: Move(frozenset({S.QUEUED, S.RUNNING}), S.COMMITTED),
    RunMove.CANCEL: Move(frozenset({S.QUEUED, S.RUNNING}), S.CANCELLED),
    # A rolled-back run fails afterwards when the source refuses one of its rollback deletes.
    # A refused run never ran, so nothing can fail after it.
    RunMove.FAIL: Move(frozenset(RunState) - {S.REFUSED}, S.FAILED),
    RunMove.ROLL_BACK: Move(frozenset({S.RUNNING}) | _STOPPED, S.ROLLED_BACK),
    # No source: the run row is created in this state (``processes.invoke.run_start``).
    RunMove.REFUSE: Move(frozenset(), S.REFUSED),
}

# The move that ends a run in each final state (``run_end`` is given the state).
ENDING_MOVES: dict[RunState, RunMove] = {
    S.COMMITTED: RunMove.COMMIT,
    S.FAILED: RunMove.FAIL,
    S.CANCELLED: RunMove.CANCEL,
    S.ROLLED_BACK: RunMove.ROLL_BACK,
    S.REFUSED: RunMove.REFUSE,
}

TRANSITIONS: dict[str, frozenset[str]] = {
    state: frozenset(move.target for move in MOVES.values() if state in move.sources)
    for state in RunState
}


def states_from(move: RunMove) -> frozenset[RunState]:
    """The states ``move`` may start from: what a conditional UPDATE filters ``state__in`` on."""
    return MOVES[move].sources


def move_check(move: RunMove, current: str) -> RunState:
    """The state ``move`` lands in from ``current``; raises ``IllegalTransition`` if it may not."""
    if current not in MOVES[move].sources:
        raise IllegalTransition(f"a run cannot {move} from {current}")
    return MOVES[move].target


def transition_check(current: str, target: str) -> None:
    """Raise ``IllegalTransition`` unless some move takes a run from ``current`` to ``target``."""
    if target not in TRANSITIONS.get(current, frozenset()):
        raise IllegalTransition(f"a run cannot go from {current} to {target}")
