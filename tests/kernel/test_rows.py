"""``kernel.rows``: a raw INSERT's parameters are what ``Model.save()`` would send, whether a value
is read straight off the row (plain strings, integers, booleans, keys, uuids on PostgreSQL) or
prepared by Django's field machinery (times, JSON, str enums, a bool given for an integer)."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection

from kernel.rows import numbered, row_insert
from processes.models import Disposition, ProcessRun, ProcessRunStep
from records.models import Record, SyncState, TrailAction, TrailOutcome, WriteTrail

pytestmark = pytest.mark.django_db


def _columns(row) -> list:
    meta = row._meta
    return [f for f in meta.concrete_fields if f is not meta.auto_field]


def _comparable(row, values: list) -> list:
    # auto_now columns are stamped at each call; JSON is wrapped in a new adapter each time.
    return [
        "<stamped>"
        if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)
        else getattr(v, "obj", v)
        for f, v in zip(_columns(row), values, strict=True)
    ]


def test_params_are_the_values_save_would_send(alice):
    record = Record(
        record_type="legacy_customer",
        fields={"n": 1},
        lines=[],
        owner=alice,
        idempotency_key="k-1",
        source_system="",
        sync_state=SyncState.LOCAL,  # a str enum: prepared, not taken as held
    )
    trail = WriteTrail(
        actor_id=alice.pk,
        actor_name="alice",
        action=TrailAction.CREATE,
        record_type="legacy_customer",
        outcome=TrailOutcome.ALLOWED,
        pg_row_id=record.pk,
        process_run_id="",
        process_step="s",
    )
    step = ProcessRunStep(
        run=ProcessRun(run_id=uuid.uuid4()),
        sequence=True,  # a bool for an integer column: prepared (Django sends 1)
        step_id="s",
        action="create",
        pg_row_id=record.pk,
        disposition=Disposition.CONFIRMED,
        external_id=None,
    )
    for row in (record, trail, step):
        prepared = [
            f.get_db_prep_save(f.pre_save(row, add=True), connection) for f in _columns(row)
        ]
        sent = row_insert(connection, row).params
        assert _comparable(row, sent) == _comparable(row, prepared)
        assert [type(v) for v in sent] == [type(v) for v in prepared]


@pytest.mark.unit
def test_placeholders_are_numbered_in_order():
    assert numbered("INSERT INTO t (a, b) SELECT %s::text, %s::int FROM x WHERE y = %s") == (
        "INSERT INTO t (a, b) SELECT $1::text, $2::int FROM x WHERE y = $3"
    )
