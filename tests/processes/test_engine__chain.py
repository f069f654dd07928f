"""The step engine on a chain: creates, awaitSource, ctx.query, declines, failures, rollback."""

from __future__ import annotations

from pathlib import Path

import pytest

from records.models import Record
from sources.scripting import sandbox_script_set
from tests.processes.engine_support import deploy, invoke, ledger, pump

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).parent.parent / "extensions" / "fixtures" / "processes"


def test_raise_po_and_bill_links_the_bill_to_the_minted_po(admin_user, alice):
    deploy((FIXTURES / "raise-po-and-bill.ts").read_text(), by=admin_user)
    run = invoke("acme:raise-po-and-bill", {"vendorId": "V-9", "amount": 250}, alice)
    assert run.state == "queued"
    pump()
    run.refresh_from_db()
    assert (run.state, run.reason, run.outstanding) == ("committed", None, 0)
    po_row, bill_row = run.ledger.order_by("sequence")
    assert (po_row.step_id, po_row.disposition) == ("po", "confirmed")
    assert po_row.external_id.startswith("PO-")
    bill = Record.reads.get(pk=bill_row.pg_row_id)
    assert bill.fields["created_from_id"] == po_row.external_id
    assert bill.owner == alice
    assert run.writes == 2


def test_a_refused_await_source_rolls_the_run_back(admin_user, alice):
    deploy((FIXTURES / "raise-po-and-bill.ts").read_text(), by=admin_user)
    sandbox_script_set(
        "purchaseOrder",
        refuse_code="VENDOR_INACTIVE",
        refuse_field="entity_id",
        refuse_message="The vendor is inactive.",
    )
    run = invoke("acme:raise-po-and-bill", {"vendorId": "V-9", "amount": 250}, alice)
    pump()
    run.refresh_from_db()
    assert run.state == "rolled_back"
    assert ledger(run) == [("po", "rolled_back", "VENDOR_INACTIVE"), ("bill", "skipped", None)]
    po = run.ledger.get(step_id="po")
    assert po.refusal_message == "The vendor is inactive."
    assert Record.reads.get(pk=po.pg_row_id).sync_state in ("deleting", "deleted")
