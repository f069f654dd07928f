"""Waking runs on a run of source verdicts: one read finds which of them a run waits on.

``records.verdicts`` announces the verdicts a drain folded together once (``source_verdicts``).
Most writes have no run waiting on them (a migration's creates); reading that per verdict cost
two statements a write. ``on_source_verdict`` is handed only the verdicts it acts on: a write
some run waits on (``awaiting_verdict``), or a delete (a rolled-back run's rollback delete).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from processes.engine.wakeups import on_source_verdict
from processes.models import ProcessRunStep
from records.models import WriteOperation
from records.verdicts import Announced


def on_source_verdicts(sender: Any = None, *, verdicts: Sequence[Announced], **kwargs: Any) -> None:
    """Connected to ``records.verdicts.source_verdicts``."""
    asked = [v.write_state_id for v in verdicts if v.operation != WriteOperation.DELETE]
    waited = set(
        ProcessRunStep.objects.filter(write_state_id__in=asked, awaiting_verdict=True)
        .order_by()
        .values_list("write_state_id", flat=True)
        .distinct()
        if asked
        else ()
    )
    for v in verdicts:
        if v.operation == WriteOperation.DELETE or v.write_state_id in waited:
            on_source_verdict(
                write_state_id=v.write_state_id, record_id=v.record_id, verdict=v.verdict
            )
