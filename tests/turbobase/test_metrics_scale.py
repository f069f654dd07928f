"""A scrape costs the same at 100,000 runs as at 1,000 (issue 22, item 3).

The same few queued runs, pending writes and held delete are there at both sizes; what grows is
the history — finished runs, confirmed writes, decided held deletes. The scrape's statements are
counted at both sizes, and their plans read: on PostgreSQL every table read of ``EXPLAIN ANALYZE``
(rows returned and rows filtered away) must not grow; on SQLite no statement may walk a whole table
or index (each read is a ``SEARCH`` on an index). No timing.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from guardrails.models import HeldDelete
from processes.engine.runner import run_deliver
from processes.invoke import run_invoke
from processes.models import ProcessRun
from records.catalog import catalog_load
from records.models import RecordWriteState
from tests.processes.conftest import TWO_NOTES, outbound_drain_all, process_deploy
from turbobase.metrics_view import metrics_text

pytestmark = pytest.mark.django_db

PENDING_ONLY = "held_delete_one_pending"  # partial: WHERE status = 'pending'
GROWING = ("process_run", "record_write_state", "guardrails_held_delete")


def _copies(model: type, template_pk: Any, n: int, overrides: dict[str, str]) -> None:
    """``n`` copies of one row, made by the database (``overrides``: column → SQL expression)."""
    table = model._meta.db_table
    columns = [
        f.column for f in model._meta.concrete_fields if not f.primary_key or f.column in overrides
    ]
    chosen = ", ".join(overrides.get(c, f't."{c}"') for c in columns)
    names = ", ".join(f'"{c}"' for c in columns)
    pk = model._meta.pk.column
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f'INSERT INTO "{table}" ({names}) SELECT {chosen} FROM "{table}" t,'
                f' generate_series(1, %s) WHERE t."{pk}" = %s',
                [n, template_pk],
            )
        else:
            cursor.execute(
                "WITH RECURSIVE series(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM series"
                f' WHERE i < %s) INSERT INTO "{table}" ({names}) SELECT {chosen}'
                f' FROM "{table}" t, series WHERE t."{pk}" = %s',
                [n, template_pk],
            )


def _uuid_sql() -> str:
    return (
        "gen_random_uuid()" if connection.vendor == "postgresql" else "lower(hex(randomblob(16)))"
    )


def _history_add(run: ProcessRun, write: RecordWriteState, held: HeldDelete, n: int) -> None:
    _copies(
        ProcessRun,
        run.pk if connection.vendor == "postgresql" else run.pk.hex,
        n,
        {"run_id": _uuid_sql(), "idempotency_key": "NULL"},
    )
    _copies(RecordWriteState, write.pk, n, {})
    _copies(HeldDelete, held.pk, n, {"pg_row_id": _uuid_sql()})
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {', '.join(GROWING)}")


def _plan_rows(node: dict) -> int:
    """Rows a plan node's table or index reads touched (returned and filtered away), and its
    children's."""
    touched = 0
    if "Relation Name" in node or node.get("Node Type", "").startswith("Index"):
        loops = node.get("Actual Loops", 1)
        touched += (node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)) * loops
    return touched + sum(_plan_rows(child) for child in node.get("Plans", []))


def _bounded(read: str) -> bool:
    """A SQLite read that touches only the rows it counts: an index search, or the walk of a
    partial index that holds only them (the pending held deletes)."""
    return read.startswith("SEARCH") or read.endswith(f"USING INDEX {PENDING_ONLY}")


def _scrape_cost() -> tuple[list[str], int, int]:
    """The scrape's statements, and (PostgreSQL) the rows their reads touched and the pages
    (buffers) they read: a walk of a whole index returns few rows but reads every page."""
    with CaptureQueriesContext(connection) as captured:
        body = metrics_text().decode()
    assert "turbobase_queue_depth" in body
    statements = [q["sql"] for q in captured.captured_queries]
    touched = pages = 0
    with connection.cursor() as cursor:
        for sql in statements:
            if connection.vendor == "postgresql":
                cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}")
                raw = cursor.fetchone()[0]
                plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
                touched += _plan_rows(plan)
                pages += plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0)
            elif any(table in sql for table in GROWING):
                cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
                reads = [row[3] for row in cursor.fetchall() if any(t in row[3] for t in GROWING)]
                assert reads and all(map(_bounded, reads)), (sql, reads)
    return statements, touched, pages


def _shape(sql: str) -> str:
    return sql.split(" WHERE ")[0]


def test_a_scrape_reads_no_more_at_100000_runs_than_at_1000(alice, admin_user):
    process_deploy(TWO_NOTES, by=admin_user, name="two-notes.ts")
    done = run_invoke(process_id="acme:two-notes", body={"memo": "x"}, user=alice)
    run_deliver(str(done.pk))
    outbound_drain_all()  # its two writes confirmed by the source: history
    waiting = run_invoke(process_id="acme:two-notes", body={"memo": "y"}, user=alice)
    run_deliver(str(waiting.pk))  # its two writes wait for the source: the backlog
    confirmed = RecordWriteState.objects.filter(status="confirmed").first()
    assert RecordWriteState.objects.filter(status="pending").count() == 2
    for n in range(5):
        run_invoke(process_id="acme:two-notes", body={"memo": str(n)}, user=alice)
    HeldDelete.objects.create(record_type="salesOrder", pg_row_id=done.pk, source_system="netsuite")
    decided = HeldDelete.objects.create(
        record_type="salesOrder",
        pg_row_id=uuid.uuid4(),
        source_system="netsuite",
        status="approved",
    )
    done.refresh_from_db()
    assert done.state == "committed"

    _history_add(done, confirmed, decided, 1_000 - ProcessRun.objects.count())
    assert ProcessRun.objects.count() == 1_000
    small_statements, small_touched, small_pages = _scrape_cost()

    _history_add(done, confirmed, decided, 99_000)
    assert ProcessRun.objects.count() == 100_000
    assert RecordWriteState.objects.filter(status="confirmed").count() > 99_000
    big_statements, big_touched, big_pages = _scrape_cost()

    assert [_shape(s) for s in big_statements] == [_shape(s) for s in small_statements]
    assert len(big_statements) <= 6
    if connection.vendor == "postgresql":
        assert big_touched <= small_touched, (small_touched, big_touched)
        # An index one level deeper reads a page more per descent (one per statement, one per
        # connected record type in the outbound read); a walk would read hundreds more.
        connected = sum(1 for rt in catalog_load().types.values() if rt.is_connected)
        descents = len(big_statements) + connected
        assert big_pages <= small_pages + 2 * descents, (small_pages, big_pages, descents)
