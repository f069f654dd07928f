"""``turbobase.testing.run_process``: a process run end to end here, the clock virtual — the real
deploy, sandbox, boundary and engine on this test's database, time skipped, the outside world
(sources, people, events) answered from the files."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from processes.errors import LocalTestFileInvalid
from processes.models import ProcessRun
from records.models import Record, RecordWriteState
from tests.processes.sleep_support import sleeper
from turbobase.testing import run_process

DEMO = Path(__file__).resolve().parents[2] / "demo" / "processes"

WAIT_FOR_PAYMENT = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:wait-for-payment',
  input: { type: 'object', properties: { customer: { type: 'string' } }, required: ['customer'] },
  steps: [
    { id: 'paid', waitFor: { event: 'order.paid', match: (ctx) => ({ customer: ctx.input.customer }),
                             timeout: '14d' } },
    { id: 'note', recordType: 'salesOrder', build: (ctx) => ({ parent: { memo: ctx.steps.paid.event
        ? `paid ${ctx.steps.paid.event.data.order}` : 'did not pay' } }) },
  ],
});
"""

PO_AND_BILL = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:po-and-bill',
  input: { type: 'object' },
  steps: [
    { id: 'po', recordType: 'purchaseOrder', awaitSource: true,
      build: () => ({ parent: { entity_id: 'V-1' } }) },
    { id: 'bill', recordType: 'vendorBill',
      build: (ctx) => ({ parent: { entity_id: 'V-1', created_from_id: ctx.steps.po?.externalId } }) },
  ],
});
"""

DROP_INVOICE = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:drop-invoice',
  input: { type: 'object', properties: { invoiceId: { type: 'string' } }, required: ['invoiceId'] },
  steps: [
    { id: 'drop', recordType: 'invoice',
      delete: { externalId: (ctx) => ctx.input.invoiceId, sourceSystem: 'netsuite' } },
  ],
});
"""


def process_file(tmp_path: Path, source: str, name: str = "process.ts") -> Path:
    folder = tmp_path / "processes"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(source, encoding="utf-8")
    return path


def steps(result) -> list[tuple[str, str, str]]:
    return [(line.step, line.kind, line.outcome) for line in result.ledger]


def test_a_thirty_day_sleep_passes_in_under_a_second_of_wall_time(db, tmp_path):
    """Under stock settings: the runtime ceiling (about 6.9 days, derived) counts working time,
    and a sleep is none — before, the 30 days asleep stopped the run at its wake-up."""
    path = process_file(tmp_path, sleeper("t:nap", sleep="'30d'"))
    result = run_process(path, input={"memo": "m"})
    assert result.state == "committed" and result.committed
    assert steps(result) == [("nap", "sleep", "confirmed"), ("after", "create", "confirmed")]
    assert result.wall_seconds < 1.0
    assert result.virtual_seconds == timedelta(days=30).total_seconds()
    run = ProcessRun.objects.get(pk=result.run_id)
    woke = run.ledger.get(step_id="nap").answer["wakeAt"]
    assert result.records[0]["parent"]["memo"] == f"m woke {woke}"


def test_a_sleep_past_a_set_runtime_ceiling_uses_none_of_it(db, tmp_path):
    """An hour asleep under a 2-second ceiling: only the deliveries' work counts against it."""
    path = process_file(tmp_path, sleeper("t:nap", sleep="'1h'"))
    fixtures = {"settings": {"processes.max_run_ms": 2000}}
    result = run_process(path, input={"memo": "m"}, fixtures=fixtures)
    assert (result.state, result.outstanding, result.reason) == ("committed", 0, None)
    assert steps(result) == [("nap", "sleep", "confirmed"), ("after", "create", "confirmed")]
    assert result.virtual_seconds == timedelta(hours=1).total_seconds()
    assert 0 < ProcessRun.objects.get(pk=result.run_id).worked_ms < 2000


def test_a_wait_for_ends_with_the_event_from_the_file_at_its_virtual_time(db, tmp_path):
    path = process_file(tmp_path, WAIT_FOR_PAYMENT)
    events = [
        {"at": "3d", "name": "order.paid", "data": {"customer": "someone-else", "order": "SO-0"}},
        {"at": "5d", "name": "order.paid", "data": {"customer": "c-1", "order": "SO-9"}},
    ]
    result = run_process(path, input={"customer": "c-1"}, events=events)
    assert steps(result) == [("paid", "waitFor", "confirmed"), ("note", "create", "confirmed")]
    assert result.records[0]["parent"] == {"memo": "paid SO-9"}
    assert result.virtual_seconds == timedelta(days=5).total_seconds()


def test_a_wait_for_with_no_event_times_out_at_once(db, tmp_path):
    path = process_file(tmp_path, WAIT_FOR_PAYMENT)
    result = run_process(path, input={"customer": "c-1"})
    assert result.committed
    assert result.records[0]["parent"] == {"memo": "did not pay"}
    assert result.virtual_seconds == timedelta(days=14).total_seconds()
    assert result.wall_seconds < 1.0


def test_await_source_confirmed_with_the_id_the_file_gives(db, tmp_path):
    path = process_file(tmp_path, PO_AND_BILL)
    result = run_process(path, verdicts={"purchaseOrder": {"confirm": "PO-9001"}})
    assert steps(result) == [("po", "create", "confirmed"), ("bill", "create", "confirmed")]
    assert result.ledger[0].external_id == "PO-9001"
    bill = next(r for r in result.records if r["recordType"] == "vendorBill")
    assert bill["parent"]["created_from_id"] == "PO-9001"


def test_await_source_refused_with_the_files_code_fails_the_run(db, tmp_path):
    path = process_file(tmp_path, PO_AND_BILL)
    verdicts = {"purchaseOrder": {"refuse": "VENDOR_INACTIVE", "field": "parent.entity_id"}}
    result = run_process(path, verdicts=verdicts)
    assert not result.committed and result.state == "failed"
    assert steps(result) == [("po", "create", "failed"), ("bill", "create", "skipped")]
    assert (result.ledger[0].code, result.ledger[0].field) == (
        "VENDOR_INACTIVE",
        "parent.entity_id",
    )
    assert not Record.reads.filter(record_type="vendorBill").exists()


def test_await_source_never_answered_stays_waiting_until_its_budget_ends(db, tmp_path):
    path = process_file(tmp_path, PO_AND_BILL)
    result = run_process(path, verdicts={"purchaseOrder": "never"})
    # The spec: a wait that runs out is no failure; the run ends committed, the step named.
    assert (result.state, result.outstanding) == ("committed", 1)
    assert "'po'" in result.reason
    assert RecordWriteState.reads.get(record_type="purchaseOrder").status == "pending"
    assert result.virtual_seconds == timedelta(minutes=5).total_seconds()
    assert result.wall_seconds < 1.0


def test_retry_backoffs_of_an_unavailable_source_pass_at_once(db, tmp_path):
    path = process_file(tmp_path, PO_AND_BILL)
    result = run_process(path, verdicts={"purchaseOrder": {"unavailable": 3}})
    assert steps(result) == [("po", "create", "confirmed"), ("bill", "create", "confirmed")]
    assert RecordWriteState.reads.get(record_type="purchaseOrder").attempts == 3  # failed ones
    assert result.virtual_seconds == 1 + 2 + 4  # the backoff after each failed attempt
    # An instance's drain waits out the 1 s and 2 s backoffs in real time; here none is waited.
    assert result.wall_seconds < 3.0


ROLL_BACK = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:roll-back',
  input: { type: 'object' },
  steps: [
    { id: 'a', recordType: 'salesOrder', build: () => ({ parent: { memo: 'a' } }) },
    { id: 'b', recordType: 'salesOrder', build: () => ({ parent: { memo: 'b' } }) },
    { id: 'po', recordType: 'purchaseOrder', awaitSource: true,
      build: () => ({ parent: { entity_id: 'V-1' } }) },
  ],
  onFailure: 'rollback',
});
"""


def test_a_rollback_waits_out_its_delete_window_at_once(db, tmp_path):
    """One rollback delete an hour: the run's later deletes wait for the window, skipped here."""
    path = process_file(tmp_path, ROLL_BACK)
    settings = {
        "guardrails.max_rollback_deletes_per_hour": 1,
        "processes.delete_wait_budget_ms": 3 * 3_600_000,
    }
    result = run_process(
        path, verdicts={"purchaseOrder": {"refuse": "NOPE"}}, fixtures={"settings": settings}
    )
    assert result.state == "rolled_back"
    assert [line.outcome for line in result.ledger] == ["rolled_back"] * 3
    assert [r["syncState"] for r in result.records] == ["deleted"] * 3
    assert result.virtual_seconds >= 3600  # at least one window waited for
    assert result.wall_seconds < 10


COUNT_CUSTOMERS = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:count-customers',
  input: { type: 'object' },
  steps: [
    { id: 'note', recordType: 'salesOrder', build: async (ctx) => {
        const rows = await ctx.query('legacy_customer?select=company_name&order=company_name');
        return { parent: { memo: rows.map((r) => r.company_name).join(',') } };
      } },
  ],
});
"""


def test_the_run_reads_and_writes_as_the_as_user(db, tmp_path):
    """legacy_customer is read by its owner only: each user's run sees that user's rows."""
    path = process_file(tmp_path, COUNT_CUSTOMERS)
    fixtures = {
        "records": {
            "legacy_customer": [
                {"parent": {"company_name": "Mine"}},
                {"parent": {"company_name": "Bobs"}, "as": "bob"},
            ]
        }
    }
    mine = run_process(path, fixtures=fixtures, as_user="alice")
    assert mine.records[0]["parent"] == {"memo": "Mine"}
    run = ProcessRun.objects.get(pk=mine.run_id)
    assert run.invoked_by.get_username() == "alice"
    assert Record.reads.get(pk=mine.records[0]["pgRowId"]).owner.get_username() == "alice"


def test_a_held_delete_is_reported(db, tmp_path):
    path = process_file(tmp_path, DROP_INVOICE)
    fixtures = {
        "records": {"invoice": [{"parent": {"entity_id": "E-1"}, "lines": [{"item": "i"}]}]}
    }
    result = run_process(path, input={"invoiceId": "INV-1041"}, fixtures=fixtures)
    assert result.committed
    assert [(line.step, line.kind, line.outcome, line.code) for line in result.ledger] == [
        ("drop", "delete", "confirmed", "SOURCE_AWAITING_CONFIRMATION")
    ]
    [held] = result.held_deletes
    assert (held["recordType"], held["externalId"], held["step"]) == ("invoice", "INV-1041", "drop")
    assert "held delete: invoice INV-1041 (step drop)" in result.table()


def test_the_demo_trial_with_its_task_answered_from_the_fixtures(db):
    fixtures = {
        "users": {"demo": {}},
        "tasks": {"check-in": {"output": {"called": True}}},
    }
    result = run_process(
        DEMO / "trial-to-paid.ts", input={"customer": "c-1", "trial": "14d"}, fixtures=fixtures
    )
    assert steps(result) == [
        ("welcome", "create", "confirmed"),
        ("trial", "sleep", "confirmed"),
        ("paid", "waitFor", "confirmed"),
        ("check-in", "task", "confirmed"),
        ("outcome", "update", "confirmed"),
    ]
    assert result.records[0]["parent"]["note"] == 'unpaid; checked in: {"called":true}'


def test_a_task_nobody_answers_expires_at_its_timeout(db):
    fixtures = {"users": {"demo": {}}}
    result = run_process(DEMO / "trial-to-paid.ts", input={"customer": "c-1"}, fixtures=fixtures)
    assert result.state == "failed"
    assert (result.ledger[3].step, result.ledger[3].code) == ("check-in", "TASK_EXPIRED")
    assert result.virtual_seconds == timedelta(days=7, minutes=6).total_seconds()


@pytest.mark.parametrize(
    ("fixtures", "field"),
    [
        ({"records": {"purchaseOrdr": [{"parent": {}}]}}, "fixtures.records.purchaseOrdr"),
        (
            {"records": {"purchaseOrder": [{"parent": {"entity_id": "V", "colour": "red"}}]}},
            "fixtures.records.purchaseOrder[0].parent.colour",
        ),
        (
            {"records": {"invoice": [{"parent": {"entity_id": "E"}, "lines": [{"qty": 1}]}]}},
            "fixtures.records.invoice[0].lines[0].qty",
        ),
        (
            {"records": {"purchaseOrder": [{"parent": {"memo": 7}}]}},
            "fixtures.records.purchaseOrder[0].parent.memo",
        ),
        ({"settings": {"processes.no_such": 1}}, "fixtures.settings.processes.no_such"),
        ({"tasks": {"check-in": {}}}, "fixtures.tasks.check-in"),
    ],
)
def test_bad_fixtures_name_the_record_and_field_and_nothing_runs(db, tmp_path, fixtures, field):
    path = process_file(tmp_path, PO_AND_BILL)
    with pytest.raises(LocalTestFileInvalid) as caught:
        run_process(path, fixtures=fixtures)
    assert caught.value.field == field
    assert caught.value.message.startswith(field)
    assert not ProcessRun.objects.exists()


def test_bad_verdicts_and_events_are_named(db, tmp_path):
    path = process_file(tmp_path, PO_AND_BILL)
    with pytest.raises(LocalTestFileInvalid) as caught:
        run_process(path, verdicts={"purchaseOrder": {"confirm": 7}})
    assert caught.value.field == "verdicts.purchaseOrder.confirm"
    with pytest.raises(LocalTestFileInvalid) as caught:
        run_process(path, events=[{"at": "soon", "name": "x"}])
    assert caught.value.field == "events[0].at"
