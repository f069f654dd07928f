"""The outbound worker in-process: each verdict of the sandbox source and what it does to the record."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import Schedule

from guardrails.models import HeldDelete
from guardrails.rules import rule_set
from guardrails.settings import setting_set
from records.boundary import record_create, record_delete, record_update
from records.catalog import record_type_get
from records.door import door_open
from records.models import Record, RecordWriteState, WriteTrail
from records.policies import records_visible
from records.trail import Actor
from records.verdicts import held_delete_decide, source_verdict
from sources.models import SandboxCounter, SandboxDocument, SandboxSend
from sources.outbound import outbound_backoff
from sources.scripting import sandbox_script_set
from sources.wakeups import retry_schedule_name
from tests.sources.conftest import drain

pytestmark = pytest.mark.django_db


def _po(actor: Actor, **parent) -> Record:
    return record_create(
        actor=actor,
        record_type="purchaseOrder",
        parent={"entity_id": "V1", **parent},
        lines=[{"item": "widget", "quantity": 2}],
    ).record


def _customer(actor: Actor, name: str = "Acme") -> Record:
    return record_create(actor=actor, record_type="customer", parent={"company_name": name}).record


def _state(record: Record, operation: str = "create") -> RecordWriteState:
    return RecordWriteState.reads.filter(record=record, operation=operation).latest("id")


def _sent(record_type: str) -> list[tuple[int, str, str]]:
    return list(
        SandboxSend.objects.filter(record_type=record_type)
        .order_by("id")
        .values_list("write_state_id", "operation", "outcome")
    )


def test_confirm_sets_external_id_synced_at_and_synced(alice_actor):
    first, second = _po(alice_actor), _po(alice_actor)
    bill = record_create(
        actor=alice_actor,
        record_type="vendorBill",
        parent={"entity_id": "V1", "created_from_id": "PO-1041"},
    ).record

    report = drain("purchaseOrder")
    drain("vendorBill")

    assert report.acquired and [kind for _, kind in report.sent] == ["confirmed", "confirmed"]
    for record, expected in ((first, "PO-1041"), (second, "PO-1042"), (bill, "VB-1041")):
        record.refresh_from_db()
        assert (record.external_id, record.sync_state) == (expected, "synced")
        assert record.synced_at is not None
        state = _state(record)
        assert (state.status, state.external_id, state.attempts, state.reason_code) == (
            "confirmed",
            expected,
            0,
            "",
        )
    assert dict(SandboxCounter.objects.values_list("prefix", "next_number")) == {
        "PO": 1043,
        "VB": 1042,
    }
    assert SandboxDocument.objects.get(external_id="PO-1041").fields == {"entity_id": "V1"}


def test_verdict_is_announced_after_commit(alice_actor, django_capture_on_commit_callbacks):
    heard = []

    def listener(sender, **kwargs):
        heard.append((kwargs["write_state_id"], kwargs["verdict"]))

    source_verdict.connect(listener)
    try:
        record = _po(alice_actor)
        with django_capture_on_commit_callbacks(execute=True):
            drain("purchaseOrder")
    finally:
        source_verdict.disconnect(listener)
    assert heard == [(_state(record).pk, "confirmed")]


def test_transient_failures_are_retried_then_synced(alice_actor):
    sandbox_script_set("purchaseOrder", transient_failures=2)
    record = _po(alice_actor)

    report = drain("purchaseOrder")

    state = _state(record)
    assert [kind for _, kind in report.sent] == ["transient", "transient", "confirmed"]
    assert (state.status, state.attempts, state.external_id) == ("confirmed", 2, "PO-1041")
    record.refresh_from_db()
    assert (record.sync_state, record.external_id) == ("synced", "PO-1041")
    assert [outcome for _, _, outcome in _sent("purchaseOrder")] == [
        "transient",
        "transient",
        "confirmed",
    ]


def test_a_transient_failure_is_not_terminal_and_holds_back_its_type_only(alice_actor, settings):
    settings.SOURCES_RETRY_BASE_SECONDS = (
        60  # too far off to wait for in the worker: scheduled instead
    )
    settings.SOURCES_RETRY_CAP_SECONDS = 300
    sandbox_script_set("purchaseOrder", transient_failures=1)
    first, second = _po(alice_actor), _po(alice_actor)
    customer = _customer(alice_actor)

    report = drain("purchaseOrder")
    drain("customer")

    state = _state(first)
    assert report.sent == [(state.pk, "transient")]
    assert (state.status, state.attempts, state.reason_code) == ("pending", 1, "TRANSIENT")
    assert state.message == "netsuite is temporarily unavailable (HTTP 503)"
    assert report.retry_at == state.next_attempt_at
    assert state.next_attempt_at > timezone.now() + timedelta(seconds=50)
    assert _state(second).status == "pending"  # order holds: the second waits behind the first
    assert [r for r, _, _ in _sent("purchaseOrder")] == [state.pk]
    schedule = Schedule.objects.get(name=retry_schedule_name("purchaseOrder"))
    assert (schedule.func, schedule.args, schedule.schedule_type) == (
        "sources.tasks.outbound_drain_task",
        "('purchaseOrder',)",
        Schedule.ONCE,
    )
    assert schedule.next_run == state.next_attempt_at
    customer.refresh_from_db()
    assert customer.sync_state == "synced"  # another type is not held up

    with door_open():
        RecordWriteState.objects.filter(pk=state.pk).update(
            next_attempt_at=timezone.now()
        )  # the retry is due
    drain("purchaseOrder")
    assert [r for r, _, _ in _sent("purchaseOrder")] == [state.pk, state.pk, _state(second).pk]
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.external_id, second.external_id) == ("PO-1041", "PO-1042")


def test_past_max_attempts_it_keeps_retrying_at_the_cap_and_is_never_parked(alice_actor, settings):
    settings.SOURCES_DRAIN_MAX_WRITES = 5
    setting_set("sources.max_attempts", 3)
    sandbox_script_set("purchaseOrder", never_answer=True)
    record = _po(alice_actor)

    report = drain("purchaseOrder")

    state = _state(record)
    assert report.yielded and len(report.sent) == 5
    assert (state.status, state.attempts, state.reason_code) == ("pending", 5, "TRANSIENT")
    assert state.message == (
        "netsuite did not answer the create (timed out) — "
        "still failing after 5 attempts; retrying every 0.2s"
    )
    record.refresh_from_db()
    assert (record.sync_state, record.external_id) == ("pending", None)
    assert [outbound_backoff(attempts=n) for n in (1, 2, 3, 9)] == [0.02, 0.04, 0.2, 0.2]


def test_refusal_is_parked_with_the_sources_own_sentence(alice_actor):
    sandbox_script_set(
        "purchaseOrder",
        refuse_code="DUPLICATE_TRANID",
        refuse_field="parent.tranid",
        refuse_message="Transaction number 77 is already used by PO-1040",
    )
    record = _po(alice_actor, tranid="77")

    report = drain("purchaseOrder")

    state = _state(record)
    assert report.sent == [(state.pk, "refused")]
    assert (state.status, state.reason_code, state.field, state.message, state.external_id) == (
        "refused",
        "DUPLICATE_TRANID",
        "parent.tranid",
        "Transaction number 77 is already used by PO-1040",
        None,
    )
    record.refresh_from_db()
    assert (record.sync_state, record.external_id, record.synced_at) == ("parked", None, None)
    assert not SandboxDocument.objects.exists()


def test_missing_mandatory_field_is_refused_naming_it(alice_actor):
    record = record_create(
        actor=alice_actor,
        record_type="purchaseOrder",
        parent={"memo": "no vendor"},
        lines=[{"item": "x"}],
    ).record

    drain("purchaseOrder")

    state = _state(record)
    assert (state.status, state.reason_code, state.field, state.message) == (
        "refused",
        "MANDATORY_FIELD_MISSING",
        "parent.entity_id",
        "entity_id is required",
    )
    record.refresh_from_db()
    assert record.sync_state == "parked"


def test_settle_conflict_keeps_the_id_and_settle_links_it(alice, alice_api):
    sandbox_script_set("purchaseOrder", settle_conflict=True)
    created = alice_api.post(
        "/v1/data/purchaseOrder",
        {"parent": {"entity_id": "V1"}, "lines": [{"item": "x"}]},
        format="json",
    ).json()

    drain("purchaseOrder")

    record = Record.reads.get(pk=created["pgRowId"])
    state = _state(record)
    assert (record.sync_state, record.external_id) == ("settle_conflict", None)
    assert (state.status, state.external_id, state.reason_code) == (
        "settle_conflict",
        "PO-1041",
        "write_settle_conflict",
    )
    assert (
        state.message
        == "netsuite applied the create as PO-1041, but linking it back to the row failed"
    )

    res = alice_api.post(
        "/v1/data/purchaseOrder/settle", {"pgRowId": created["pgRowId"]}, format="json"
    )

    assert res.status_code == 200, res.content
    assert (res.json()["externalId"], res.json()["syncState"], res.json()["outcome"]) == (
        "PO-1041",
        "synced",
        "settled",
    )
    record.refresh_from_db()
    state.refresh_from_db()
    assert (record.external_id, record.sync_state, state.status) == ("PO-1041", "synced", "settled")
    assert record.synced_at is not None
    again = alice_api.post(
        "/v1/data/purchaseOrder/settle", {"pgRowId": created["pgRowId"]}, format="json"
    )
    assert again.status_code == 409
    assert again.json()["rejection"]["code"] == "NOT_SETTLE_CONFLICT"


def test_settle_on_a_row_that_is_not_in_conflict_is_409(alice, alice_api):
    record = _po(Actor(user=alice))
    drain("purchaseOrder")

    res = alice_api.post(
        "/v1/data/purchaseOrder/settle", {"pgRowId": str(record.pk)}, format="json"
    )

    assert res.status_code == 409
    assert res.json() == {
        "error": "conflict",
        "rejection": {
            "code": "NOT_SETTLE_CONFLICT",
            "field": "pgRowId",
            "message": f"purchaseOrder {record.pk} is synced, not waiting to be settled",
        },
    }
    record.refresh_from_db()
    assert (record.sync_state, record.external_id) == ("synced", "PO-1041")


def test_a_confirm_whose_link_back_fails_becomes_a_settle_conflict(alice_actor, alice_api):
    # Faked upstream state: an inbound copy of CUS-1041 arrived before our create's verdict.
    with door_open():
        inbound = Record.objects.create(
            record_type="customer",
            source_system="netsuite",
            external_id="CUS-1041",
            sync_state="synced",
            fields={"company_name": "Acme (inbound)"},
        )
    record = _customer(alice_actor)

    drain("customer")

    state = _state(record)
    record.refresh_from_db()
    assert (record.sync_state, record.external_id) == ("settle_conflict", None)
    assert (state.status, state.external_id, state.reason_code) == (
        "settle_conflict",
        "CUS-1041",
        "write_settle_conflict",
    )
    assert state.message == (
        "netsuite created CUS-1041, but linking it back failed: another row already holds that id"
    )

    res = alice_api.post("/v1/data/customer/settle", {"pgRowId": str(record.pk)}, format="json")

    assert res.status_code == 200, res.content
    assert not Record.reads.filter(pk=inbound.pk).exists()  # the inbound copy is discarded
    record.refresh_from_db()
    assert (record.external_id, record.sync_state) == ("CUS-1041", "synced")


def test_held_delete_is_not_sent_before_approval_and_is_sent_after(alice_actor, admin_user):
    record = _customer(alice_actor)
    drain("customer")
    held = record_delete(actor=alice_actor, record_type="customer", pg_row_id=record.pk)
    assert held.outcome == "held"

    report = drain("customer")

    assert report.sent == []
    assert [op for _, op, _ in _sent("customer")] == ["create"]
    assert _state(record, "delete").status == "held"

    held_delete_decide(
        held_id=HeldDelete.objects.get(pg_row_id=record.pk).pk, approve=True, by=admin_user
    )
    drain("customer")

    assert [(op, outcome) for _, op, outcome in _sent("customer")] == [
        ("create", "confirmed"),
        ("delete", "confirmed"),
    ]
    record.refresh_from_db()
    assert record.sync_state == "deleted"
    assert _state(record, "delete").status == "confirmed"
    assert SandboxDocument.objects.get(external_id="CUS-1041").is_deleted


def test_a_delete_the_source_refuses_unhides_the_record_with_the_reason(alice, alice_actor):
    rule_set(record_type="purchaseOrder", action="delete", decision="allow")
    po = _po(alice_actor)
    drain("purchaseOrder")
    bill = record_create(
        actor=alice_actor,
        record_type="vendorBill",
        parent={"entity_id": "V1", "created_from_id": "PO-1041"},
    ).record
    drain("vendorBill")
    record_delete(actor=alice_actor, record_type="purchaseOrder", pg_row_id=po.pk)
    po.refresh_from_db()
    assert po.sync_state == "deleting"

    drain("purchaseOrder")

    po.refresh_from_db()
    state = _state(po, "delete")
    assert po.sync_state == "synced"
    assert list(records_visible(user=alice, record_type=record_type_get("purchaseOrder"))) == [po]
    assert (state.status, state.reason_code, state.field) == ("refused", "RECORD_REFERENCED", "")
    assert (
        state.message
        == "purchaseOrder PO-1041 cannot be deleted: vendorBill VB-1041 was created from it"
    )
    assert not SandboxDocument.objects.get(external_id="PO-1041").is_deleted
    bill.refresh_from_db()
    assert bill.sync_state == "synced"


def test_scripted_refusal_of_deletes_only(alice_actor):
    rule_set(record_type="customer", action="delete", decision="allow")
    sandbox_script_set(
        "customer",
        operation="delete",
        refuse_code="RECORD_LOCKED",
        refuse_message="Customer is locked by an open period",
    )
    record = _customer(alice_actor)
    drain("customer")
    record_delete(actor=alice_actor, record_type="customer", pg_row_id=record.pk)

    drain("customer")

    record.refresh_from_db()
    assert (record.sync_state, record.external_id) == ("synced", "CUS-1041")
    state = _state(record, "delete")
    assert (state.status, state.reason_code, state.message) == (
        "refused",
        "RECORD_LOCKED",
        "Customer is locked by an open period",
    )


def test_update_follows_its_create_and_reaches_the_document(alice_actor):
    record = _customer(alice_actor)
    record_update(
        actor=alice_actor, record_type="customer", pg_row_id=record.pk, parent={"phone": "555"}
    )

    drain("customer")

    assert [op for _, op, _ in _sent("customer")] == ["create", "update"]
    assert _state(record, "update").status == "confirmed"
    assert SandboxDocument.objects.get(external_id="CUS-1041").fields == {
        "company_name": "Acme",
        "phone": "555",
    }
    record.refresh_from_db()
    assert (record.sync_state, record.sync_version) == ("synced", 2)


def test_update_blanking_a_mandatory_field_is_refused(alice_actor):
    record = _customer(alice_actor)
    record_update(
        actor=alice_actor, record_type="customer", pg_row_id=record.pk, parent={"company_name": ""}
    )

    drain("customer")

    state = _state(record, "update")
    assert (state.status, state.reason_code, state.field, state.message) == (
        "refused",
        "MANDATORY_FIELD_MISSING",
        "parent.company_name",
        "company_name is required",
    )


def test_update_of_a_record_whose_create_was_refused_is_not_sent(alice_actor):
    sandbox_script_set(
        "customer",
        operation="create",
        refuse_code="INVALID_SUBSIDIARY",
        refuse_message="No subsidiary",
    )
    record = _customer(alice_actor)
    record_update(
        actor=alice_actor, record_type="customer", pg_row_id=record.pk, parent={"phone": "555"}
    )

    drain("customer")

    state = _state(record, "update")
    assert (state.status, state.reason_code, state.field) == (
        "refused",
        "SOURCE_NOT_LINKED",
        "externalId",
    )
    assert state.message == (
        f"customer {record.pk} has no id in netsuite (its create is refused), "
        "so the update was not sent"
    )
    assert [op for _, op, _ in _sent("customer")] == ["create"]


def test_delete_of_a_record_the_source_never_took_is_confirmed_here(alice_actor):
    rule_set(record_type="customer", action="delete", decision="allow")
    sandbox_script_set(
        "customer",
        operation="create",
        refuse_code="INVALID_SUBSIDIARY",
        refuse_message="No subsidiary",
    )
    record = _customer(alice_actor)
    drain("customer")
    record_delete(actor=alice_actor, record_type="customer", pg_row_id=record.pk)

    drain("customer")

    record.refresh_from_db()
    assert record.sync_state == "deleted"
    assert _state(record, "delete").status == "confirmed"
    assert [op for _, op, _ in _sent("customer")] == ["create"]


def test_writes_of_one_type_are_sent_in_commit_order_for_every_writer(alice, bob):
    writers = [Actor(user=alice), Actor(user=bob)]
    records = [_customer(writers[i % 2], f"C{i}") for i in range(8)]
    for i, record in enumerate(records[:4]):  # the other writer changes each of them
        record_update(
            actor=writers[(i + 1) % 2],
            record_type="customer",
            pg_row_id=record.pk,
            parent={"phone": str(i)},
        )

    drain("customer")

    ids = [write_id for write_id, _, _ in _sent("customer")]
    assert ids == list(
        RecordWriteState.reads.filter(record_type="customer")
        .order_by("id")
        .values_list("id", flat=True)
    )
    assert len(ids) == 12
    for i, record in enumerate(records):
        record.refresh_from_db()
        assert (record.external_id, record.sync_state) == (f"CUS-{1041 + i}", "synced")
    assert set(SandboxSend.objects.values_list("in_flight", flat=True)) == {1}


def test_a_second_drain_stands_down_while_the_lane_is_held(alice_actor):
    from sources.lanes import lane_acquire, lane_release

    _customer(alice_actor)
    assert lane_acquire(record_type="customer", token="someone-else", seconds=60)

    report = drain("customer")

    assert (report.acquired, report.sent) == (False, [])
    lane_release(record_type="customer", token="someone-else")
    assert len(drain("customer").sent) == 1


def test_a_lease_that_ran_out_is_taken_over(alice_actor):
    from sources.lanes import lane_acquire

    _customer(alice_actor)
    assert lane_acquire(record_type="customer", token="crashed-worker", seconds=-1)

    assert len(drain("customer").sent) == 1


def test_the_boundary_trail_is_untouched_by_verdicts(alice_actor):
    record = _customer(alice_actor)
    drain("customer")
    assert list(WriteTrail.reads.filter(pg_row_id=record.pk).values_list("action", "outcome")) == [
        ("create", "allowed")
    ]
