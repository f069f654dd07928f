"""The sandbox source as an adapter: its rules, its id counter, the adapter base and the registry."""

from __future__ import annotations

import pytest

from records.boundary import record_create
from records.catalog import record_type_get
from records.models import RecordWriteState
from sources.adapters import adapter_for_source
from sources.adapters.base import OutboundWrite, SourceAdapter, confirmed, refused
from sources.adapters.sandbox import SandboxAdapter, sandbox_mint
from sources.models import SandboxCounter, SandboxDocument
from sources.scripting import sandbox_script_clear, sandbox_script_set
from tests.sources.conftest import drain

pytestmark = pytest.mark.django_db


def _write(
    record_type: str, *, operation: str = "create", parent=None, lines=None, external_id=None
) -> OutboundWrite:
    return OutboundWrite(
        write_state_id=1,
        operation=operation,
        record_type=record_type_get(record_type),
        source_name="netsuite",
        pg_row_id="00000000-0000-0000-0000-000000000001",
        external_id=external_id,
        parent=parent or {},
        lines=lines or [],
    )


def test_transaction_create_without_lines_is_refused_atomic_write_required():
    outcome = SandboxAdapter(source_name="netsuite").send(
        _write("invoice", parent={"entity_id": "C1"})
    )

    assert outcome == refused(
        "ATOMIC_WRITE_REQUIRED",
        "lines",
        "netsuite creates a invoice with its lines in one write: "
        "send a non-empty lines array, or set created_from_id",
    )
    assert not SandboxDocument.objects.exists()
    assert not SandboxCounter.objects.exists()


def test_transformed_transaction_needs_no_lines():
    outcome = SandboxAdapter(source_name="netsuite").send(
        _write("invoice", parent={"created_from_id": "SO-1041"})
    )

    assert outcome == confirmed("INV-1041")


def test_ids_are_minted_per_prefix_from_1041_and_survive_a_new_adapter():
    assert [sandbox_mint("PO"), sandbox_mint("PO"), sandbox_mint("VB")] == [
        "PO-1041",
        "PO-1042",
        "VB-1041",
    ]
    outcome = SandboxAdapter(source_name="netsuite").send(
        _write("purchaseOrder", parent={"entity_id": "V"}, lines=[{"item": "x"}])
    )
    assert outcome == confirmed("PO-1043")
    assert SandboxCounter.objects.get(prefix="PO").next_number == 1044


def test_update_of_a_document_the_source_does_not_have_is_refused():
    outcome = SandboxAdapter(source_name="netsuite").send(
        _write("customer", operation="update", parent={"phone": "1"}, external_id="CUS-9999")
    )

    assert outcome == refused(
        "SOURCE_RECORD_MISSING", "externalId", "netsuite has no customer CUS-9999"
    )


def test_script_is_replaced_and_cleared(alice_actor):
    sandbox_script_set("customer", refuse_code="NOPE", refuse_message="not today")
    sandbox_script_set("customer", latency_ms=1)  # replaces the whole script: no refusal any more
    record_create(actor=alice_actor, record_type="customer", parent={"company_name": "A"})
    drain("customer")
    assert RecordWriteState.reads.get().status == "confirmed"
    assert sandbox_script_clear() == 1


def test_script_for_an_unknown_type_is_404():
    from records.catalog import RecordTypeNotFound

    with pytest.raises(RecordTypeNotFound):
        sandbox_script_set("nope", never_answer=True)


def test_adapter_base_names_the_missing_method():
    class Half(SourceAdapter):
        def create(self, write):
            return confirmed("X-1")

    adapter = Half(source_name="x")
    assert adapter.send(_write("customer")) == confirmed("X-1")
    with pytest.raises(
        NotImplementedError, match=r"^subclasses of SourceAdapter must provide update\(\)$"
    ):
        adapter.update(_write("customer", operation="update"))
    with pytest.raises(
        NotImplementedError, match=r"^subclasses of SourceAdapter must provide delete\(\)$"
    ):
        adapter.send(_write("customer", operation="delete"))


def test_registry_picks_the_catalogs_adapter():
    adapter = adapter_for_source("netsuite")
    assert isinstance(adapter, SandboxAdapter) and adapter.source_name == "netsuite"


def test_an_unknown_adapter_keeps_the_write_queued_and_says_why(use_catalog, alice_actor, settings):
    settings.SOURCES_RETRY_BASE_SECONDS, settings.SOURCES_RETRY_CAP_SECONDS = 60, 300
    use_catalog(sources={"erp": {"adapter": "soap"}}, types={"order": {"source": "erp"}})
    record = record_create(actor=alice_actor, record_type="order", parent={"a": 1}).record

    drain("order")

    state = RecordWriteState.reads.get(record=record)
    assert (state.status, state.attempts, state.reason_code) == ("pending", 1, "TRANSIENT")
    assert (
        state.message == "source 'erp' names adapter 'soap'; this instance has ['http', 'sandbox']"
    )
