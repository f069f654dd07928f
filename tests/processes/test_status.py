"""The run-state table (``processes.status``) is the one source of every run-state change."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.db.models import TextChoices

from processes.engine.claim import run_claim
from processes.engine.ending import run_end
from processes.engine.statuses import StepStatus, WalkStatus
from processes.errors import IllegalTransition
from processes.invoke import run_invoke
from processes.models import Disposition, PendingReason, ProcessRun, RunState, SkipReason
from processes.status import MOVES, TRANSITIONS, RunMove, move_check, states_from, transition_check
from tests.literals import bare_literals, bare_literals_in, enum_values

S = RunState
PROCESSES = Path(__file__).resolve().parents[2] / "processes"


# --- the table ---------------------------------------------------------------------------------


def test_the_table_allows_exactly_these_moves():
    assert {
        S.QUEUED: {S.RUNNING, S.COMMITTED, S.FAILED, S.CANCELLED},
        S.RUNNING: {S.RUNNING, S.COMMITTED, S.FAILED, S.CANCELLED, S.ROLLED_BACK},
        S.COMMITTED: {S.QUEUED, S.RUNNING, S.FAILED, S.ROLLED_BACK},
        S.FAILED: {S.QUEUED, S.RUNNING, S.FAILED, S.ROLLED_BACK},  # QUEUED: a redrive
        S.CANCELLED: {S.RUNNING, S.FAILED, S.ROLLED_BACK},
        S.ROLLED_BACK: {S.FAILED},
        S.REFUSED: set(),  # born refused (RunMove.REFUSE has no source), it never moves
    } == TRANSITIONS


def test_the_conditional_updates_filter_on_the_tables_from_states():
    assert states_from(RunMove.CLAIM) == {S.QUEUED, S.RUNNING}
    assert states_from(RunMove.RESUME) == {S.COMMITTED}
    assert states_from(RunMove.ROLLBACK) == {S.COMMITTED, S.FAILED, S.CANCELLED}
    assert {
        move: MOVES[move].target for move in (RunMove.CLAIM, RunMove.RESUME, RunMove.ROLLBACK)
    } == {RunMove.CLAIM: S.RUNNING, RunMove.RESUME: S.QUEUED, RunMove.ROLLBACK: S.RUNNING}


@pytest.mark.parametrize(
    ("move", "current"),
    [
        (RunMove.CLAIM, S.COMMITTED),
        (RunMove.CLAIM, S.CANCELLED),
        (RunMove.CLAIM, S.ROLLED_BACK),
        (RunMove.RESUME, S.FAILED),
        (RunMove.RESUME, S.RUNNING),
        (RunMove.ROLLBACK, S.QUEUED),
        (RunMove.ROLLBACK, S.RUNNING),
        (RunMove.ROLLBACK, S.ROLLED_BACK),
        (RunMove.CANCEL, S.COMMITTED),
        (RunMove.COMMIT, S.ROLLED_BACK),
        (RunMove.COMMIT, S.FAILED),
        (RunMove.ROLL_BACK, S.QUEUED),
        # A refused run never ran: nothing claims, resumes, rolls back, cancels or fails it.
        (RunMove.CLAIM, S.REFUSED),
        (RunMove.RESUME, S.REFUSED),
        (RunMove.ROLLBACK, S.REFUSED),
        (RunMove.CANCEL, S.REFUSED),
        (RunMove.FAIL, S.REFUSED),
        # ...and no run becomes refused once it exists.
        (RunMove.REFUSE, S.QUEUED),
        (RunMove.REFUSE, S.RUNNING),
    ],
)
def test_an_illegal_move_raises(move, current):
    with pytest.raises(IllegalTransition):
        move_check(move, current)


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (S.ROLLED_BACK, S.COMMITTED),
        (S.COMMITTED, S.CANCELLED),
        (S.FAILED, S.COMMITTED),
        (S.QUEUED, S.ROLLED_BACK),
        (S.CANCELLED, S.QUEUED),
        (S.RUNNING, S.QUEUED),
    ],
)
def test_an_illegal_transition_raises(current, target):
    with pytest.raises(IllegalTransition):
        transition_check(current, target)


def test_a_legal_move_lands_on_its_target():
    assert move_check(RunMove.CLAIM, S.QUEUED) == S.RUNNING
    assert move_check(RunMove.RESUME, S.COMMITTED) == S.QUEUED


# --- the engine asks it ------------------------------------------------------------------------


@pytest.fixture
def run(alice, two_notes) -> ProcessRun:
    return run_invoke(process_id="acme:two-notes", body={"memo": "m"}, user=alice)


@pytest.mark.django_db
def test_ending_a_rolled_back_run_committed_is_refused_and_changes_nothing(run):
    ProcessRun.objects.filter(pk=run.pk).update(
        state=S.ROLLED_BACK, reason="rolled back on request"
    )
    run.refresh_from_db()
    with pytest.raises(IllegalTransition):
        run_end(run, S.COMMITTED, reason="nope")
    run.refresh_from_db()
    assert (run.state, run.reason, run.finished_at) == (
        S.ROLLED_BACK,
        "rolled back on request",
        None,
    )


@pytest.mark.django_db
@pytest.mark.parametrize("state", [S.COMMITTED, S.FAILED, S.CANCELLED, S.ROLLED_BACK, S.REFUSED])
def test_a_delivery_never_claims_a_run_the_table_does_not_let_it_claim(run, state):
    ProcessRun.objects.filter(pk=run.pk).update(state=state, pending_reason="")
    assert run_claim(str(run.pk)) is None
    run.refresh_from_db()
    assert (run.state, run.lease_owner, run.lease_until, run.started_at) == (state, "", None, None)


@pytest.mark.django_db
def test_a_claimed_queued_run_is_running(run):
    assert run_claim(str(run.pk)) is not None
    run.refresh_from_db()
    assert (run.state, run.pending_reason) == (S.RUNNING, PendingReason.RUNNING)
    assert run.lease_owner != ""


# --- no bare state in processes/ ---------------------------------------------------------------

# Values that name a state or status; in processes/ they are written only as the members that own them.
# (VerdictWait's "pending" is left out: the demo's records have a "status" field of that value.)
_WATCHED = enum_values(RunState, PendingReason, SkipReason, Disposition, WalkStatus, StepStatus)


def test_every_state_in_processes_is_written_as_its_enum_member():
    assert bare_literals_in(["processes"], _WATCHED) == []


def test_the_scan_finds_a_bare_state():
    sample = (
        'class Walk(TextChoices):\n    DONE = "done"\n\n'
        'def f(run):\n    """running"""\n    return run.state == "running", {"queued": 1}, run["failed"]\n'
    )
    assert bare_literals(sample, _WATCHED) == [(6, "running")]


def test_the_enums_are_django_choices_where_they_are_stored():
    assert all(
        issubclass(enum, TextChoices) for enum in (RunState, PendingReason, SkipReason, Disposition)
    )


# --- every run-state write goes through the table ----------------------------------------------


def _is_call_to(node: ast.AST, name: str) -> bool:
    return (
        isinstance(node, ast.Call)
        and getattr(node.func, "id", getattr(node.func, "attr", None)) == name
    )


def _is_move_target(node: ast.AST) -> bool:
    """``MOVES[<move>].target`` or ``move_check(<move>, …)``: a state the table gave."""
    if _is_call_to(node, "move_check"):
        return True
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "target"
        and isinstance(node.value, ast.Subscript)
        and getattr(node.value.value, "id", None) == "MOVES"
    )


def _other_models_rows(call: ast.Call) -> bool:
    """``HumanTask.objects….update(state=…)``: a chain rooted at a model other than ProcessRun
    writes that model's own state (a task's, an event wait's), never a run's."""
    node: ast.AST = call.func
    while isinstance(node, ast.Attribute | ast.Call):
        node = node.value if isinstance(node, ast.Attribute) else node.func
    return isinstance(node, ast.Name) and node.id[:1].isupper() and node.id != "ProcessRun"


def _state_writes_off_the_table(source: str) -> list[tuple[int, str]]:
    """Where a run's state is written, or a conditional UPDATE's from-states chosen, without the table.

    ``run_end`` may assign the state it was given: it checks the transition first (tested above).
    """
    found = []
    for function in ast.walk(ast.parse(source)):
        if (
            not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
            or function.name == "run_end"
        ):
            continue
        for statement in ast.walk(function):
            # A conditional UPDATE's from-states: a state__in= in a statement that updates. A
            # read that filters by state (finished runs, say) moves nothing.
            if not isinstance(statement, ast.Assign | ast.Expr | ast.Return | ast.AnnAssign):
                continue  # a simple statement: a compound one holds many
            if not any(_is_call_to(node, "update") for node in ast.walk(statement)):
                continue
            for node in ast.walk(statement):
                if (
                    isinstance(node, ast.keyword)
                    and node.arg == "state__in"
                    and not _is_call_to(node.value, "states_from")
                ):
                    found.append((node.value.lineno, "state__in= not from states_from()"))
        for node in ast.walk(function):
            if (
                (_is_call_to(node, "update") or _is_call_to(node, "save"))
                and isinstance(node, ast.Call)
                and not _other_models_rows(node)
            ):
                for keyword in node.keywords:
                    if keyword.arg == "state" and not _is_move_target(keyword.value):
                        found.append((keyword.value.lineno, "update(state=…) not a move's target"))
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    names = target.elts if isinstance(target, ast.Tuple) else [target]
                    values = (
                        node.value.elts
                        if isinstance(node.value, ast.Tuple)
                        else [node.value] * len(names)
                    )
                    for name, value in zip(names, values, strict=False):
                        if (
                            isinstance(name, ast.Attribute)
                            and name.attr == "state"
                            and not _is_move_target(value)
                        ):
                            found.append((node.lineno, ".state = … not a move's target"))
    return sorted(found)


def test_every_run_state_write_in_processes_takes_the_table():
    files = sorted(p for p in PROCESSES.rglob("*.py") if "migrations" not in p.parts)
    off = [
        f"{path.relative_to(PROCESSES.parent)}:{line}: {why}"
        for path in files
        for line, why in _state_writes_off_the_table(path.read_text())
    ]
    assert off == []


def test_the_state_write_scan_finds_writes_off_the_table():
    sample = (
        "def claim(run):\n"
        "    ProcessRun.objects.filter(state__in=[RunState.QUEUED]).update(state=RunState.RUNNING)\n"
        "    run.state, run.reason = RunState.FAILED, ''\n"
        "    runs = ProcessRun.objects.filter(state__in=states_from(RunMove.CLAIM))\n"
        "    runs.update(state=MOVES[RunMove.CLAIM].target)\n"
        "    run.state = move_check(RunMove.CLAIM, run.state)\n"
        "    HumanTask.objects.filter(pk=1, state='open').update(state='completed')\n"
        "    ended = ProcessRun.objects.filter(state__in=TERMINAL_STATES).count()\n"
        "def run_end(run, state):\n"
        "    run.state = state\n"
    )
    assert _state_writes_off_the_table(sample) == [
        (2, "state__in= not from states_from()"),
        (2, "update(state=…) not a move's target"),
        (3, ".state = … not a move's target"),
    ]
