"""The write trail: one row per boundary decision, with actor, record, outcome, code and run/step."""

from __future__ import annotations

import pytest

from guardrails.models import HeldDelete
from records.boundary import record_create, record_delete, record_update
from records.errors import RequiredFieldMissing
from records.models import WriteTrail
from records.trail import Actor
from records.verdicts import held_delete_decide

pytestmark = pytest.mark.django_db

COLUMNS = ("action", "record_type", "outcome", "code", "actor_id", "process_run_id", "process_step")


def _rows() -> list[tuple]:
    return list(WriteTrail.reads.order_by("id").values_list(*COLUMNS))


def test_every_decision_leaves_one_row_with_its_run_and_step(alice, admin_user):
    actor = Actor(user=alice, process_run_id="r1", process_step="po")
    first = record_create(
        actor=actor,
        record_type="customer",
        parent={"company_name": "A"},
        idempotency_key="run:r1:po",
    ).record
    duplicate = record_create(
        actor=actor,
        record_type="customer",
        parent={"company_name": "A"},
        idempotency_key="run:r1:po",
    ).record
    assert duplicate.pk == first.pk
    with pytest.raises(RequiredFieldMissing):
        record_create(actor=actor, record_type="migration_item", parent={})
    record_update(actor=actor, record_type="customer", pg_row_id=first.pk, parent={"memo": "m"})
    held = record_delete(actor=actor, record_type="customer", pg_row_id=first.pk)
    assert held.outcome == "held"
    second = record_create(actor=actor, record_type="customer", parent={"company_name": "B"}).record
    record_delete(actor=actor, record_type="customer", pg_row_id=second.pk)
    first_hold, second_hold = HeldDelete.objects.order_by("id")
    assert (first_hold.process_run_id, first_hold.process_step) == ("r1", "po")
    held_delete_decide(held_id=first_hold.pk, approve=True, by=admin_user)
    held_delete_decide(held_id=second_hold.pk, approve=False, by=admin_user)

    run = ("r1", "po")
    assert _rows() == [
        ("create", "customer", "allowed", "", alice.pk, *run),
        ("create", "customer", "duplicate", "", alice.pk, *run),
        ("create", "migration_item", "refused", "REQUIRED_FIELD_MISSING", alice.pk, *run),
        ("update", "customer", "allowed", "", alice.pk, *run),
        ("delete", "customer", "held", "SOURCE_AWAITING_CONFIRMATION", alice.pk, *run),
        ("create", "customer", "allowed", "", alice.pk, *run),
        ("delete", "customer", "held", "SOURCE_AWAITING_CONFIRMATION", alice.pk, *run),
        # The operator's decisions are the operator's own, outside any run.
        ("delete", "customer", "approved", "", admin_user.pk, "", ""),
        ("delete", "customer", "rejected", "", admin_user.pk, "", ""),
    ]
    pg_row_ids = list(WriteTrail.reads.order_by("id").values_list("pg_row_id", flat=True))
    assert pg_row_ids == [
        first.pk,
        first.pk,
        None,
        first.pk,
        first.pk,
        second.pk,
        second.pk,
        first.pk,
        second.pk,
    ]


def test_refusal_row_carries_field_and_message(alice):
    with pytest.raises(RequiredFieldMissing):
        record_create(
            actor=Actor(user=alice), record_type="migration_item", parent={"note": "no legacy_id"}
        )
    row = WriteTrail.reads.get()
    assert (row.field, row.message) == ("parent.legacy_id", "legacy_id is required")


def test_an_app_write_has_no_run_or_step(alice_api, alice):
    alice_api.post("/v1/data/customer", {"parent": {"company_name": "A"}}, format="json")
    row = WriteTrail.reads.get()
    assert (row.actor_id, row.process_run_id, row.process_step, row.outcome) == (
        alice.pk,
        "",
        "",
        "allowed",
    )


def test_an_app_idempotency_key_is_namespaced_and_its_duplicate_trailed(alice_api):
    first = alice_api.post(
        "/v1/data/customer",
        {"parent": {"company_name": "A"}},
        HTTP_IDEMPOTENCY_KEY="k",
        format="json",
    )
    again = alice_api.post(
        "/v1/data/customer",
        {"parent": {"company_name": "A"}},
        HTTP_IDEMPOTENCY_KEY="k",
        format="json",
    )
    assert (first.status_code, again.status_code) == (201, 200)
    assert list(WriteTrail.reads.order_by("id").values_list("outcome", flat=True)) == [
        "allowed",
        "duplicate",
    ]
