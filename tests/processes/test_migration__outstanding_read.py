"""A slice's outstanding read: only the rows it takes are read, the rest counted in SQL.

Seed 000: ``outstanding`` is read once per slice; the run's ``outstanding`` is the rows the slice
read minus the rows it finished; a row listed twice is visited once; an author's own ``limit`` and
``offset`` bound the read.
"""

from __future__ import annotations

import pytest

from guardrails.settings import setting_set
from processes.engine.runner import run_deliver
from processes.models import ProcessRun, ProcessRunSlice
from records.boundary import record_create
from records.models import Record
from records.trail import Actor
from tests.processes.engine_support import deploy, invoke, pump

pytestmark = pytest.mark.django_db

SOURCE = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:outstanding-read',
  input: { type: 'object' },
  eachRow: {
    outstanding: () => 'migration_item?select=pg_row_id,__KEY__,company_name&status=eq.pending&order=__KEY____PAGE__',
    key: '__KEY__',
  },
  steps: [
    { id: 'create', recordType: 'customer',
      build: (ctx) => ({ parent: { company_name: ctx.row!.company_name } }) },
    { id: 'mark', recordType: 'migration_item', update: { pgRowId: (ctx) => ctx.row!.pg_row_id as string },
      rollback: 'keep', build: () => ({ parent: { status: 'sent' } }) },
  ],
});
"""


def _item(user, legacy_id: str, n: int, note: str | None = None) -> Record:
    parent = {"legacy_id": legacy_id, "company_name": f"Company {n}", "status": "pending"}
    if note is not None:
        parent["note"] = note
    return record_create(actor=Actor(user=user), record_type="migration_item", parent=parent).record


def _items(user, count: int) -> None:
    for n in range(count):
        _item(user, f"L{n:05d}", n)


def _first_slice(admin_user, alice, page: str = "", key: str = "legacy_id") -> ProcessRun:
    deploy(SOURCE.replace("__PAGE__", page).replace("__KEY__", key), by=admin_user)
    run = invoke("t:outstanding-read", {}, alice)
    run_deliver(str(run.pk), run.delivery)
    run.refresh_from_db()
    return run


def _paged_first_slice(
    admin_user, alice, *, slice_rows: int, items: int, page: str
) -> tuple[ProcessRun, ProcessRunSlice]:
    """``items`` pending rows, slices of ``slice_rows``, the author's ``page`` (limit, offset) on
    the read: the run after its first slice, and that slice."""
    setting_set("processes.slice_max_rows", slice_rows)
    _items(alice, items)
    run = _first_slice(admin_user, alice, page)
    return run, run.slice_log.get(number=1)


def _keys(rows: list[dict]) -> list[str]:
    return [row["legacy_id"] for row in rows]


def test_a_slice_reads_the_rows_it_takes_and_counts_the_rest_each_key_once(admin_user, alice):
    setting_set("processes.slice_max_rows", 5)
    _items(alice, 40)
    _item(alice, "L00001", 101)  # listed twice: visited once, counted once
    _item(alice, "L00003", 103)
    # The whole answer (42 rows, ~3.8 kB) is past this ceiling; the rows one slice reads are not.
    setting_set("processes.query_max_bytes", 1_500)
    run = _first_slice(admin_user, alice)
    first = run.slice_log.get(number=1)
    assert _keys(first.rows) == ["L00000", "L00001", "L00002", "L00003", "L00004"]
    assert (first.total_read, run.state, run.outstanding, run.slices) == (40, "running", 35, 1)
    assert Record.reads.filter(record_type="customer").count() == 5
    assert run.ledger.filter(step_id="create").count() == 5


def test_an_authors_limit_bounds_what_is_read_and_counted(admin_user, alice):
    run, first = _paged_first_slice(admin_user, alice, slice_rows=5, items=20, page="&limit=7")
    assert (len(first.rows), first.total_read, run.outstanding) == (5, 7, 2)
    pump()
    run.refresh_from_db()
    # Each slice reads the first 7 pending of the predicate, until fewer than a slice's rows are.
    assert (run.state, run.outstanding, run.slices) == ("committed", 0, 4)
    assert Record.reads.filter(record_type="customer").count() == 20


def test_an_authors_offset_and_limit_are_the_rows_the_slice_reads(admin_user, alice):
    run, first = _paged_first_slice(
        admin_user, alice, slice_rows=10, items=12, page="&offset=3&limit=4"
    )
    assert _keys(first.rows) == ["L00003", "L00004", "L00005", "L00006"]
    # Every row read was finished: nothing is outstanding (the read's bounds are the author's).
    assert (first.total_read, run.state, run.outstanding) == (4, "committed", 0)


def test_a_row_without_its_key_past_what_the_slice_takes_still_fails_the_run(admin_user, alice):
    setting_set("processes.slice_max_rows", 5)
    for n in range(12):
        _item(alice, f"L{n:05d}", n, note=f"N{n:05d}")
    _item(alice, "L99999", 99)  # no note: ordered last, never among the rows the slice takes
    run = _first_slice(admin_user, alice, key="note")
    assert run.state == "failed"
    assert "has no 'note' (eachRow.key)" in run.reason
    assert Record.reads.filter(record_type="customer").count() == 0
    assert not run.slice_log.exists()
