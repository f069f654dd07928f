"""Records, sources and guardrails write their states and outcomes as enum members, never bare strings."""

from __future__ import annotations

import re

from guardrails.models import Decision, HeldStatus, RuleAction, WindowKind
from records.hooks import HookSlot
from records.models import SyncState, TrailAction, TrailOutcome, WriteOperation, WriteStatus
from records.outcomes import VerdictKind, WriteOutcome
from tests.literals import bare_literals_in, enum_values

WATCHED = enum_values(
    SyncState,
    WriteStatus,
    WriteOperation,
    TrailOutcome,
    TrailAction,
    WriteOutcome,
    VerdictKind,
    HeldStatus,
    Decision,
    RuleAction,
    WindowKind,
    HookSlot,
)
# The same words in another sense: ORM method names the door refuses, an admin message's verb,
# and the sandbox script's ``settle_conflict`` switch (a column name).
NOT_STATES = {
    "records/door.py: 'create'",
    "records/door.py: 'update'",
    "records/door.py: 'delete'",
    "records/held_deletes/admin.py: 'approved'",
    "records/held_deletes/admin.py: 'rejected'",
    "sources/admin.py: 'settle_conflict'",
}


def test_no_bare_state_or_outcome_in_records_sources_and_guardrails():
    found = bare_literals_in(["records", "sources", "guardrails"], WATCHED)
    # Compared without the line number, so the allowance survives edits around it.
    assert [hit for hit in found if re.sub(r":\d+: ", ": ", hit) not in NOT_STATES] == []
