"""The drain sends runs of writes (``sources.outbound_run``): what a run is cut at, what a run that
fails half-way leaves behind, the pacing of a run, and what a run costs in statements."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from guardrails.settings import setting_set
from records.boundary import record_create, record_update
from records.models import Record, RecordWriteState
from sources.models import SandboxCounter, SandboxDocument, SandboxInFlight, SandboxSend
from sources.outbound_run import RUN_MAX
from tests.sources.conftest import drain

pytestmark = pytest.mark.django_db


def _customers(actor, count: int) -> list[Record]:
    return [
        record_create(actor=actor, record_type="customer", parent={"company_name": f"C{i}"}).record
        for i in range(count)
    ]


def test_a_record_s_update_behind_its_create_goes_in_the_next_run_with_the_new_id(alice_actor):
    first, second = _customers(alice_actor, 2)
    record_update(
        actor=alice_actor, record_type="customer", pg_row_id=first.pk, parent={"memo": "later"}
    )

    report = drain("customer")

    assert [kind for _, kind in report.sent] == ["confirmed"] * 3
    update = RecordWriteState.reads.get(record=first, operation="update")
    assert (update.status, update.external_id) == ("confirmed", "CUS-1041")
    assert SandboxDocument.objects.get(external_id="CUS-1041").fields["memo"] == "later"
    second.refresh_from_db()
    assert second.external_id == "CUS-1042"


def test_a_run_that_fails_before_its_verdicts_commit_leaves_nothing_upstream(
    alice_actor, monkeypatch
):
    records = _customers(alice_actor, 5)

    def crash(answers):
        raise RuntimeError("the worker died folding the run")

    monkeypatch.setattr("sources.outbound_run.outbound_answers_apply", crash)
    with pytest.raises(RuntimeError):
        drain("customer")

    # The sandbox answered the run in the transaction the fold was in: none of it stands.
    assert not SandboxSend.objects.exists()
    assert not SandboxDocument.objects.exists()
    assert not SandboxCounter.objects.filter(next_number__gt=1041).exists()
    assert set(SandboxInFlight.objects.values_list("count", flat=True)) <= {0}
    assert set(RecordWriteState.reads.values_list("status", flat=True)) == {"pending"}

    monkeypatch.undo()
    report = drain("customer")  # sent again, whole, once
    assert [kind for _, kind in report.sent] == ["confirmed"] * 5
    assert list(SandboxSend.objects.order_by("id").values_list("write_state_id", flat=True)) == [
        RecordWriteState.reads.get(record=r).pk for r in records
    ]
    assert sorted(SandboxDocument.objects.values_list("external_id", flat=True)) == [
        f"CUS-{n}" for n in range(1041, 1046)
    ]


def test_a_refused_create_in_a_run_spends_no_number(alice_actor):
    _customers(alice_actor, 1)
    record_create(actor=alice_actor, record_type="customer", parent={"company_name": ""})
    _customers(alice_actor, 1)

    report = drain("customer")

    assert [kind for _, kind in report.sent] == ["confirmed", "refused", "confirmed"]
    assert sorted(SandboxDocument.objects.values_list("external_id", flat=True)) == [
        "CUS-1041",
        "CUS-1042",
    ]
    assert SandboxCounter.objects.get(prefix="CUS").next_number == 1043


def test_a_run_keeps_the_source_s_rate(alice_actor, admin_user):
    setting_set("sources.netsuite.max_per_second", 10, by=admin_user)
    _customers(alice_actor, 6)

    report = drain("customer")

    assert len(report.sent) == 6
    starts = list(SandboxSend.objects.order_by("id").values_list("started_at", flat=True))
    # Slots are 1/rate apart; a slot's write starts at it or a little after (the first one after
    # the run's read and ticket), so a gap may be short by that little.
    jitter = 0.04
    gaps = [(b - a).total_seconds() for a, b in zip(starts, starts[1:], strict=False)]
    assert (starts[-1] - starts[0]).total_seconds() >= 5 * 0.1 - jitter
    assert min(gaps) >= 0.1 - jitter


def test_a_run_costs_a_few_statements_a_write(alice_actor):
    _customers(alice_actor, 2 * RUN_MAX)

    with CaptureQueriesContext(connection) as queries:
        report = drain("customer")

    assert len(report.sent) == 2 * RUN_MAX
    # A run, whatever its size: its read, the lane's renewal, the pacing ticket and release, the
    # sandbox's gauge, look-ups, numbering and inserts, the fold's two locking reads and two
    # UPDATEs (each an executemany: one pipelined round trip, logged once), the wake-up's read,
    # with their BEGIN/COMMITs — 48 on PostgreSQL and SQLite today; 48 a write before runs.
    assert len(queries) <= 2 * 50
