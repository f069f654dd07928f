"""Acceptance with real workers: two ``qcluster`` worker processes drain the outbound queue.

50 writes of one type, from two writers, committed while the workers run: the sandbox sees them
one at a time, in commit order, each exactly once; another type written in the middle is not
held up behind them.
"""

from __future__ import annotations

from itertools import pairwise

import pytest

from records.boundary import record_create
from records.models import RecordWriteState
from records.trail import Actor
from sources.models import SandboxSend
from sources.scripting import sandbox_script_set
from sources.wakeups import outbound_enqueue
from tests.workers import wait_until

pytestmark = [pytest.mark.workers, pytest.mark.django_db(transaction=True)]

WRITES = 50


def test_fifty_writes_of_one_type_reach_the_source_in_commit_order_never_two_in_flight(
    qcluster, alice, bob
):
    sandbox_script_set(
        "purchaseOrder", latency_ms=30
    )  # long enough for two workers to collide, if they could
    writers = [Actor(user=alice), Actor(user=bob)]
    orders = []
    for i in range(WRITES):
        orders.append(
            record_create(
                actor=writers[i % 2],
                record_type="purchaseOrder",
                parent={"entity_id": f"V{i}"},
                lines=[{"item": "widget", "line": i}],
            ).record
        )
        if i == 10:
            customer = record_create(
                actor=writers[0], record_type="customer", parent={"company_name": "Quick"}
            ).record
    for _ in range(6):  # extra drains of the busy type: every worker is tempted to take its lane
        outbound_enqueue(record_type="purchaseOrder")

    wait_until(
        lambda: not RecordWriteState.reads.filter(status="pending").exists(),
        timeout=45,
        message=f"every write to be sent; worker log:\n{qcluster.log_text()}",
    )

    write_ids = list(
        RecordWriteState.reads.filter(record_type="purchaseOrder")
        .order_by("id")
        .values_list("id", flat=True)
    )
    sends = list(
        SandboxSend.objects.filter(record_type="purchaseOrder").order_by("started_at", "id")
    )
    assert [s.write_state_id for s in sends] == write_ids  # commit order, each exactly once
    assert {s.in_flight for s in sends} == {1}
    for before, after in pairwise(sends):
        assert after.started_at >= before.finished_at, (
            "two writes of one type were in flight together"
        )
    for i, order in enumerate(orders):
        order.refresh_from_db()
        assert (order.external_id, order.sync_state) == (f"PO-{1041 + i}", "synced")

    customer.refresh_from_db()
    assert (customer.external_id, customer.sync_state) == ("CUS-1041", "synced")
    customer_send = SandboxSend.objects.get(record_type="customer")
    # Not held up: the customer reached the source while the purchase orders were still going out.
    assert customer_send.started_at < sends[-1].started_at
    assert customer.synced_at < max(o.synced_at for o in orders)
