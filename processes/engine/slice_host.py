"""``SliceHost``: what a migration's slice (``engine.migration``) needs of the runner walking it.

A protocol, so ``engine.runner`` imports ``engine.migration`` and nothing imports back: the
runner (``ChainRunner``) is the one host, checked structurally where it hands itself over.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from django.contrib.auth.models import User

from processes.ceilings import Ceilings
from processes.engine.lease import Lease
from processes.engine.plan import PlannedStep
from processes.engine.runtime import ModuleRuntime
from processes.engine.walks import Stop, Walk
from processes.models import ProcessRun, ProcessRunStep
from records.trail import Actor


class SliceHost(Protocol):
    run: ProcessRun
    lease: Lease | None
    definition: dict[str, Any]
    ceilings: Ceilings
    invoker: User
    actor: Actor

    def run_set(self, **columns: Any) -> None: ...

    def runtime(self) -> ModuleRuntime: ...

    def ctx(self, planned: PlannedStep, steps: dict[str, dict], row: dict | None) -> dict: ...

    def walk_steps(
        self,
        plan: list[PlannedStep],
        recorded: dict[str, ProcessRunStep],
        *,
        row_key: str,
        visit: int,
        row: dict | None,
        stop_between_steps: bool,
    ) -> Walk: ...

    def stop_check(self) -> Stop | None: ...

    def wait_source(
        self, planned: PlannedStep, row: ProcessRunStep, *, outstanding: int
    ) -> None: ...

    def wait_window(
        self,
        planned: PlannedStep,
        result: Any,
        rest: list[PlannedStep],
        *,
        row_key: str = "",
        visit: int = 1,
        outstanding: int | None = None,
    ) -> None: ...

    def wait_retry(self, planned: PlannedStep, until: datetime, attempts: int) -> None: ...

    def fail(self, planned: PlannedStep, row: ProcessRunStep, *, outstanding: int) -> None: ...
