"""Python hooks in the boundary's slots: a rejection refuses the write with the hook's own code."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from records.boundary import record_create
from records.catalog import record_type_get
from records.errors import HookRejection
from records.hooks import HookContext, hook_register
from records.models import Record, RecordWriteState, WriteTrail
from records.policies import records_visible
from records.trail import Actor

pytestmark = pytest.mark.django_db


@pytest.fixture
def register() -> Iterator[Callable[..., None]]:
    unregister: list[Callable[[], None]] = []

    def _register(slot: str, record_type: str, hook) -> None:
        unregister.append(hook_register(slot=slot, record_type=record_type, hook=hook))

    yield _register
    for undo in unregister:
        undo()


def require_memo(context: HookContext) -> None:
    if not context.record["parent"].get("memo"):
        raise HookRejection(
            "a memo is required on every customer", code="MEMO_REQUIRED", field="parent.memo"
        )


MEMO_REFUSAL = {
    "error": "write_refused",
    "rejection": {
        "code": "MEMO_REQUIRED",
        "field": "parent.memo",
        "message": "a memo is required on every customer",
    },
}


def test_before_save_rejection_refuses_a_create(alice_api, register):
    register("before_save", "customer", require_memo)
    res = alice_api.post("/v1/data/customer", {"parent": {"company_name": "A"}}, format="json")
    assert res.status_code == 422
    assert res.json() == MEMO_REFUSAL
    assert Record.reads.count() == 0
    assert RecordWriteState.reads.count() == 0
    trail = WriteTrail.reads.get()
    assert (trail.action, trail.outcome, trail.code, trail.field) == (
        "create",
        "refused",
        "MEMO_REQUIRED",
        "parent.memo",
    )
    assert trail.message == "a memo is required on every customer"


def test_before_save_passes_a_valid_create(alice_api, register):
    seen: list[HookContext] = []
    register("before_save", "customer", lambda ctx: seen.append(ctx))
    register("before_save", "customer", require_memo)
    res = alice_api.post(
        "/v1/data/customer", {"parent": {"company_name": "A", "memo": "m"}}, format="json"
    )
    assert res.status_code == 201
    (ctx,) = seen
    assert (ctx.slot, ctx.record_type, ctx.operation, ctx.actor) == (
        "before_save",
        "customer",
        "create",
        "alice",
    )
    assert ctx.changes == {"company_name": "A", "memo": "m"}


def test_before_save_rejection_refuses_an_update_and_writes_nothing(alice, alice_api, register):
    record = record_create(
        actor=Actor(user=alice), record_type="customer", parent={"company_name": "A", "memo": "m"}
    ).record
    register("before_save", "customer", require_memo)
    res = alice_api.patch(
        "/v1/data/customer", {"pgRowId": str(record.pk), "parent": {"memo": ""}}, format="json"
    )
    assert res.status_code == 422
    assert res.json() == MEMO_REFUSAL
    record.refresh_from_db()
    assert (record.fields, record.sync_version) == ({"company_name": "A", "memo": "m"}, 1)
    assert RecordWriteState.reads.filter(operation="update").count() == 0
    trail = WriteTrail.reads.filter(action="update").get()
    assert (trail.outcome, trail.code, trail.field, trail.pg_row_id) == (
        "refused",
        "MEMO_REQUIRED",
        "parent.memo",
        record.pk,
    )


def test_before_save_sees_the_merged_record_on_update(alice, alice_api, register):
    record = record_create(
        actor=Actor(user=alice), record_type="customer", parent={"company_name": "A", "memo": "m"}
    ).record
    seen: list[HookContext] = []
    register("before_save", "customer", lambda ctx: seen.append(ctx))
    alice_api.patch(
        "/v1/data/customer", {"pgRowId": str(record.pk), "parent": {"memo": "n"}}, format="json"
    )
    (ctx,) = seen
    assert ctx.operation == "update"
    assert ctx.record["parent"] == {"company_name": "A", "memo": "n"}
    assert ctx.changes == {"memo": "n"}


def test_hook_of_another_type_does_not_run(alice_api, register):
    register("before_save", "entity", require_memo)
    res = alice_api.post("/v1/data/customer", {"parent": {"company_name": "A"}}, format="json")
    assert res.status_code == 201


def test_wildcard_hook_runs_for_every_type(alice_api, register):
    register("before_save", "*", require_memo)
    res = alice_api.post("/v1/data/entity", {"parent": {"name": "A"}}, format="json")
    assert res.status_code == 422
    assert res.json()["rejection"]["code"] == "MEMO_REQUIRED"


def test_before_delete_rejection_refuses_the_delete(alice, alice_api, register):
    record = record_create(
        actor=Actor(user=alice), record_type="customer", parent={"company_name": "A"}
    ).record

    def keep_customers(context: HookContext) -> None:
        raise HookRejection(
            "customers are never deleted here", code="CUSTOMER_KEPT", field="pgRowId"
        )

    register("before_delete", "customer", keep_customers)
    res = alice_api.delete("/v1/data/customer", {"pgRowId": str(record.pk)}, format="json")
    assert res.status_code == 422
    assert res.json() == {
        "error": "write_refused",
        "rejection": {
            "code": "CUSTOMER_KEPT",
            "field": "pgRowId",
            "message": "customers are never deleted here",
        },
    }
    record.refresh_from_db()
    assert record.sync_state == "pending"
    assert list(records_visible(user=alice, record_type=record_type_get("customer"))) == [record]
    assert RecordWriteState.reads.filter(operation="delete").count() == 0
    trail = WriteTrail.reads.get(action="delete")
    assert (trail.outcome, trail.code) == ("refused", "CUSTOMER_KEPT")


def test_after_delete_runs_after_commit_with_the_snapshot(
    alice, alice_api, register, django_capture_on_commit_callbacks
):
    record = record_create(
        actor=Actor(user=alice), record_type="legacy_customer", parent={"name": "a"}
    ).record
    seen: list[HookContext] = []
    register("after_delete", "legacy_customer", lambda ctx: seen.append(ctx))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        res = alice_api.delete(
            "/v1/data/legacy_customer", {"pgRowId": str(record.pk)}, format="json"
        )
        assert res.status_code == 200
    assert seen == []  # nothing ran inside the transaction
    for callback in callbacks:
        callback()
    (ctx,) = seen
    assert (ctx.slot, ctx.operation, ctx.actor) == ("after_delete", "delete", "alice")
    assert ctx.record == {
        "pgRowId": str(record.pk),
        "externalId": None,
        "parent": {"name": "a"},
        "lines": [],
        "syncVersion": 1,
    }


def test_after_delete_failure_does_not_undo_the_delete(
    alice, alice_api, register, django_capture_on_commit_callbacks
):
    record = record_create(
        actor=Actor(user=alice), record_type="legacy_customer", parent={"name": "a"}
    ).record

    def broken(context: HookContext) -> None:
        raise RuntimeError("boom")

    register("after_delete", "legacy_customer", broken)
    with django_capture_on_commit_callbacks(execute=True):
        res = alice_api.delete(
            "/v1/data/legacy_customer", {"pgRowId": str(record.pk)}, format="json"
        )
    assert res.status_code == 200
    assert not Record.reads.filter(pk=record.pk).exists()


def test_after_delete_does_not_run_for_a_refused_delete(
    alice, alice_api, register, django_capture_on_commit_callbacks
):
    record = record_create(
        actor=Actor(user=alice), record_type="legacy_customer", parent={"name": "a"}
    ).record
    seen: list[HookContext] = []
    register("after_delete", "legacy_customer", lambda ctx: seen.append(ctx))
    register(
        "before_delete",
        "legacy_customer",
        lambda ctx: (_ for _ in ()).throw(HookRejection("no", code="NO", field=None)),
    )
    with django_capture_on_commit_callbacks(execute=True):
        res = alice_api.delete(
            "/v1/data/legacy_customer", {"pgRowId": str(record.pk)}, format="json"
        )
    assert res.status_code == 422
    assert seen == []
    assert Record.reads.filter(pk=record.pk).exists()
