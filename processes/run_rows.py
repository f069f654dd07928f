"""A run as the queue and the run summaries read it: ``QueueRun`` (a plain row) and
``RunSummarized`` (what a summary reads, of a ``ProcessRun`` or a ``QueueRun``)."""

from __future__ import annotations

import uuid
from typing import Any, NamedTuple, Protocol

from processes.models import TERMINAL_STATES


class RunSummarized(Protocol):
    """What a run's summary (the queue, the last runs) and its failure read of a run: a
    ``ProcessRun`` or a ``QueueRun`` row."""

    @property
    def pk(self) -> Any: ...
    @property
    def run_id(self) -> uuid.UUID: ...
    @property
    def process_id(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def pending_reason(self) -> str: ...
    @property
    def outstanding(self) -> int: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def failed_sequence(self) -> int | None: ...
    @property
    def refusal_code(self) -> str: ...
    @property
    def is_terminal(self) -> bool: ...


class QueueRun(NamedTuple):
    """One run as the queue lists it, read as a plain row (``values_list(*QueueRun._fields)``):
    a full queue is 500 runs, and a model instance each cost several times the row's read."""

    run_id: uuid.UUID
    process_id: str
    mode: str
    state: str
    pending_reason: str
    outstanding: int
    reason: str | None
    failed_sequence: int | None
    refusal_code: str

    @property
    def pk(self) -> uuid.UUID:
        return self.run_id

    @property
    def is_terminal(self) -> bool:
        return self.state in TERMINAL_STATES
