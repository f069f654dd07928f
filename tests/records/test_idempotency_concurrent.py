"""Real concurrency on PostgreSQL: one idempotency key → one record; a cap of one admits one delete.

Each thread has its own database connection (Django's are per thread) and closes it at the end;
a Barrier lines the writers up so they hit the boundary at the same moment.
"""

from __future__ import annotations

import pytest
from django.db import connection

from guardrails.models import HeldDelete, WindowEvent
from guardrails.settings import setting_set
from records.boundary import record_create, record_delete
from records.errors import DeleteCapExceeded
from records.models import Record, RecordWriteState, WriteTrail
from records.trail import Actor
from tests.concurrency import race

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: SQLite serialises writers, so there is no race to test",
    ),
]

ROUNDS = 20


def test_two_writers_with_one_key_make_one_record(alice):
    actor = Actor(user=alice)
    for round_ in range(ROUNDS):
        key = f"race:{round_}"
        results = race(
            2,
            lambda i, key=key: record_create(
                actor=actor,
                record_type="customer",
                parent={"company_name": f"writer {i}"},
                idempotency_key=key,
            ),
        )
        assert not [r for r in results if isinstance(r, Exception)], results
        assert sorted(r.outcome for r in results) == ["created", "duplicate"]
        assert results[0].record.pk == results[1].record.pk
        record = Record.reads.get(idempotency_key=key)
        assert RecordWriteState.reads.filter(record=record).count() == 1
        assert sorted(
            WriteTrail.reads.filter(pg_row_id=record.pk).values_list("outcome", flat=True)
        ) == ["allowed", "duplicate"]
    assert Record.reads.count() == ROUNDS


def test_two_deletes_at_a_cap_of_one_admit_exactly_one(alice):
    setting_set("guardrails.max_deletes_per_min", 1)
    actor = Actor(user=alice)
    records = [
        record_create(actor=actor, record_type="customer", parent={"company_name": n}).record
        for n in ("A", "B")
    ]
    results = race(
        2, lambda i: record_delete(actor=actor, record_type="customer", pg_row_id=records[i].pk)
    )
    held = [r for r in results if not isinstance(r, Exception)]
    refused = [r for r in results if isinstance(r, DeleteCapExceeded)]
    assert len(held) == 1 and len(refused) == 1, results
    assert held[0].outcome == "held"
    assert refused[0].field == "guardrails.max_deletes_per_min"
    assert WindowEvent.objects.filter(kind="delete").count() == 1
    assert HeldDelete.objects.count() == 1
    states = sorted(Record.reads.values_list("sync_state", flat=True))
    assert states == ["delete_held", "pending"]


def test_many_deletes_at_a_cap_admit_exactly_the_cap(alice):
    setting_set("guardrails.max_deletes_per_min", 3)
    actor = Actor(user=alice)
    records = [
        record_create(actor=actor, record_type="customer", parent={"company_name": str(n)}).record
        for n in range(8)
    ]
    results = race(
        8, lambda i: record_delete(actor=actor, record_type="customer", pg_row_id=records[i].pk)
    )
    assert sum(not isinstance(r, Exception) for r in results) == 3
    assert sum(isinstance(r, DeleteCapExceeded) for r in results) == 5
    assert WindowEvent.objects.count() == 3
    assert Record.reads.filter(sync_state="delete_held").count() == 3
