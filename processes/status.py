"""Run states and the one function that moves a run between them."""
from __future__ import annotations

from processes.errors import IllegalTransition
from processes.models import RunState

S = RunState
TRANSITIONS: dict[str, frozenset[str]] = {
    S.QUEUED: frozenset({S.RUNNING, S.CANCELLED, S.FAILED, S.COMMITTED}),
    S.RUNNING: frozenset({S.RUNNING, S.COMMITTED, S.FAILED, S.ROLLED_BACK, S.CANCELLED, S.QUEUED}),
    # A resume re-queues a committed run; a rollback on request runs from any stopped state.
    S.COMMITTED: frozenset({S.QUEUED, S.RUNNING, S.ROLLED_BACK, S.FAILED}),
    S.FAILED: frozenset({S.RUNNING, S.ROLLED_BACK, S.FAILED}),
    S.CANCELLED: frozenset({S.RUNNING, S.ROLLED_BACK, S.FAILED}),
    S.ROLLED_BACK: frozenset({S.FAILED}),  # the source refused a rollback delete afterwards
}


def transition_check(current: str, target: str) -> None:
    if target not in TRANSITIONS.get(current, frozenset()):
        raise IllegalTransition(f"a run cannot go from {current} to {target}")
