"""The sandbox source honours the idempotency key a re-sent create carries, as a real source would."""

from __future__ import annotations

import pytest

from records.catalog import record_type_get
from sources.adapters.base import OutboundWrite, confirmed
from sources.adapters.sandbox import SandboxAdapter
from sources.models import SandboxCounter, SandboxDocument

pytestmark = pytest.mark.django_db


def _create(write_state_id: int, company: str) -> OutboundWrite:
    return OutboundWrite(
        write_state_id=write_state_id,
        operation="create",
        record_type=record_type_get("customer"),
        source_name="netsuite",
        pg_row_id="00000000-0000-0000-0000-000000000001",
        external_id=None,
        parent={"company_name": company},
    )


def test_a_create_re_sent_with_the_same_key_gets_the_first_document_back():
    sandbox = SandboxAdapter(source_name="netsuite")
    first = sandbox.send(_create(7, "Company 13755"))
    again = sandbox.send(
        _create(7, "Company 13755")
    )  # the first answer was lost with a killed worker

    assert first == again == confirmed("CUS-1041")
    assert list(SandboxDocument.objects.values_list("external_id", "idempotency_key")) == [
        ("CUS-1041", "turbobase-write-7")
    ]
    assert (
        SandboxCounter.objects.get(prefix="CUS").next_number == 1042
    )  # no number spent on the re-send


def test_another_write_is_another_document():
    sandbox = SandboxAdapter(source_name="netsuite")
    assert [sandbox.send(_create(n, f"Company {n}")) for n in (1, 2)] == [
        confirmed("CUS-1041"),
        confirmed("CUS-1042"),
    ]
    assert SandboxDocument.objects.count() == 2
