"""A run's timeline: its ledger as bars on one time axis, for the run page in the admin.

The ledger stores when each step began (``started_at``, before its ``when``/``build`` ran), when
its row was written (``created_at``, at the end of the step's transaction) and last changed
(``updated_at``: a verdict taken, a rollback). A step's bar runs from its start to its row, so the
time between two steps (a delivery queued, a slice waiting its turn) is not drawn as the second
step's work. A row written before ``started_at`` existed starts where the step before it ended
(the first one where the run started). A write that waited for its source's verdict is drawn as a wait from the write
to the verdict (or to now, while it still waits), and a run parked now (``pending_reason``) ends
in a wait bar naming why.

A big run is drawn from buckets of consecutive steps (at most ``MAX_BARS`` bars), each coloured
failed if any of its steps failed (else by what most of them did) and titled with every count,
so a 5,000-step run's page stays small. Positions are percentages computed here; the template draws plain HTML/CSS.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from processes.models import Disposition, PendingReason, ProcessRun

MAX_BARS = 200
MAX_SLICE_MARKS = 60
# A source-bound write whose verdict came later than this after the write is drawn as a wait.
WAIT_SHOWN_AFTER = timedelta(milliseconds=500)
WAITING = (
    PendingReason.AWAITING_SOURCE,
    PendingReason.AWAITING_TIME,
    PendingReason.AWAITING_ACTION,
    PendingReason.AWAITING_INPUT,
)
# The row the timeline reads per step (values_list order).
STEP_COLUMNS = (
    "sequence",
    "step_id",
    "disposition",
    "slice",
    "started_at",
    "created_at",
    "updated_at",
    "awaiting_verdict",
    "write_state_id",
)


@dataclass(frozen=True)
class Bar:
    left: float  # percent of the axis
    width: float  # percent of the axis
    kind: str  # a disposition, or "wait"
    label: str  # the bar's title (tooltip) and its text for screen readers


@dataclass(frozen=True)
class SliceMark:
    left: float
    number: int


@dataclass
class Timeline:
    start: datetime
    end: datetime
    steps: int
    bars: list[Bar] = field(default_factory=list)
    waits: list[Bar] = field(default_factory=list)
    slices: list[SliceMark] = field(default_factory=list)
    bucket: int = 1  # steps per bar (1 = every step its own bar)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def duration(self) -> timedelta:
        return self.end - self.start

    @property
    def duration_text(self) -> str:
        """``1 h 02 min 03.4 s`` / ``2 min 05.0 s`` / ``0.812 s``: what the run page prints."""
        seconds = self.duration.total_seconds()
        if seconds < 60:
            return f"{seconds:.3f} s"
        minutes, seconds = divmod(seconds, 60)
        hours, minutes = divmod(int(minutes), 60)
        return (
            f"{hours} h {minutes:02d} min " if hours else f"{minutes} min "
        ) + f"{seconds:04.1f} s"


@dataclass(frozen=True)
class _Step:
    sequence: int
    step_id: str
    disposition: str
    slice: int
    start: datetime
    end: datetime
    waited_until: datetime | None


class _Axis:
    def __init__(self, start: datetime, end: datetime) -> None:
        self.start = start
        self.span = max((end - start).total_seconds(), 0.001)

    def at(self, moment: datetime) -> float:
        return round(min(max((moment - self.start).total_seconds() / self.span, 0.0), 1.0) * 100, 3)

    def bar(self, start: datetime, end: datetime, kind: str, label: str) -> Bar:
        left = self.at(start)
        return Bar(
            left=left, width=round(max(self.at(end) - left, 0.15), 3), kind=kind, label=label
        )


def _steps(run: ProcessRun, rows: list[tuple], now: datetime) -> list[_Step]:
    previous_end = run.started_at or run.created_at
    steps = []
    for (
        sequence,
        step_id,
        disposition,
        slice_number,
        started,
        created,
        updated,
        awaiting,
        write_state,
    ) in rows:
        waited_until = None
        if awaiting:
            waited_until = now
        elif write_state is not None and updated - created > WAIT_SHOWN_AFTER:
            waited_until = updated
        start = min(started or previous_end, created)
        steps.append(
            _Step(sequence, step_id, disposition, slice_number, start, created, waited_until)
        )
        previous_end = created
    return steps


def _colour(counts: Counter) -> str:
    """A bucket's colour: failed if any step in it failed (a failure must not be averaged away),
    else rolled back if any was, else the disposition most of its steps had."""
    for alarming in (Disposition.FAILED, Disposition.ROLLED_BACK):
        if counts.get(alarming):
            return alarming
    return counts.most_common(1)[0][0]


def timeline_build(run: ProcessRun, rows: list[tuple], *, now: datetime) -> Timeline:
    """The timeline of ``run`` from its ledger ``rows`` (``STEP_COLUMNS``, in sequence order)."""
    steps = _steps(run, rows, now)
    start = run.started_at or run.created_at
    ends = [step.end for step in steps] + [step.waited_until for step in steps if step.waited_until]
    end = run.finished_at or (now if not run.is_terminal else max(ends, default=start))
    end = max([end, *ends]) if ends else end
    axis = _Axis(start, end)
    timeline = Timeline(
        start=start,
        end=end,
        steps=len(steps),
        counts=dict(Counter(step.disposition for step in steps)),
    )
    timeline.bucket = max(1, math.ceil(len(steps) / MAX_BARS))
    for first in range(0, len(steps), timeline.bucket):
        group = steps[first : first + timeline.bucket]
        counts = Counter(step.disposition for step in group)
        if len(group) == 1:
            step = group[0]
            label = f"#{step.sequence} {step.step_id}: {step.disposition}"
        else:
            label = f"steps #{group[0].sequence}–#{group[-1].sequence}: " + ", ".join(
                f"{n} {kind}" for kind, n in counts.most_common()
            )
        timeline.bars.append(axis.bar(group[0].start, group[-1].end, _colour(counts), label))
    waited = [(step, step.waited_until) for step in steps if step.waited_until]
    for step, waited_until in waited[:MAX_BARS]:
        timeline.waits.append(
            axis.bar(
                step.end,
                waited_until,
                "wait",
                f"#{step.sequence} {step.step_id} waited for its source's verdict",
            )
        )
    if run.pending_reason in WAITING:
        since = steps[-1].end if steps else start
        until = f", wakes {run.wake_at:%Y-%m-%d %H:%M:%S}" if run.wake_at else ""
        where = run.waiting_step or "its next step"
        label = f"waiting ({run.pending_reason}) at {where}{until}"
        timeline.waits.append(axis.bar(since, end, "wait", label))
    firsts: dict[int, datetime] = {}
    for step in steps:
        firsts.setdefault(step.slice, step.start)
    if len(firsts) > 1:
        numbers = sorted(firsts)
        every = max(1, math.ceil(len(numbers) / MAX_SLICE_MARKS))
        timeline.slices = [SliceMark(axis.at(firsts[n]), n) for n in numbers[::every]]
    return timeline
