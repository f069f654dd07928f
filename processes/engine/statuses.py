"""Where one step, one pass over a plan, and one awaited verdict ended — inside a delivery.

None of these is stored (the ledger row keeps the ``Disposition``, the run its ``RunState`` and
``PendingReason``); they are how the engine's parts tell each other what happened, named once so
a typo is an ``AttributeError`` rather than a branch that never matches.
"""

from __future__ import annotations

from enum import StrEnum


class StepStatus(StrEnum):
    """What ``step_execute`` did with one step."""

    DONE = "done"  # its ledger row is written (a write, a skip, or a delete's notice)
    FAILED = "failed"  # its ledger row is written with the refusal on it
    WAIT_WINDOW = "wait_window"  # a delete met a full delete window: nothing written, wait
    WAIT_ACTION = "wait_action"  # a task step's task is open: nothing written, wait for a person
    WAIT_INPUT = "wait_input"  # a waitFor step's wait is open: nothing written, wait for an event
    WAIT_TIME = "wait_time"  # a sleep step's time has not come: nothing written, park until it
    WAIT_RETRY = "wait_retry"  # an AI step's provider failed transiently: nothing written, retry


class WalkStatus(StrEnum):
    """Where one pass over a plan (a chain, or one row of a migration) ended."""

    DONE = "done"  # every step is recorded
    STOP = "stop"  # a cancel, an off switch or a ceiling stopped it at a step boundary
    HAND_BACK = "hand_back"  # a sync run's request ran out of budget: its lane goes on from here
    WAIT_SOURCE = "wait_source"  # an awaitSource step's write has no verdict yet
    WAIT_WINDOW = "wait_window"  # a delete waits for the delete window to free
    WAIT_ACTION = "wait_action"  # a task step waits for a person's decision
    WAIT_INPUT = "wait_input"  # a waitFor step waits for a matching event
    WAIT_TIME = "wait_time"  # a sleep step waits for its time
    WAIT_RETRY = "wait_retry"  # an AI step waits to ask its provider again (retrying)
    FAILED = "failed"  # a step failed (and is not a delete that continues on refusal)


class VerdictWait(StrEnum):
    """An awaited write's verdict, as folded into its ledger row."""

    PENDING = "pending"  # no verdict yet: the run keeps waiting
    CONFIRMED = "confirmed"
    FAILED = "failed"  # refused, or applied upstream but not linked back


class StepKind(StrEnum):
    """What a step does, worked out from its definition once (``PlannedStep.kind``); the ledger
    row's ``action`` stores it."""

    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    AI = "ai"
    TASK = "task"
    WAIT_FOR = "waitFor"
    SLEEP = "sleep"
