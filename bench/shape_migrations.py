"""Migration shapes: the seed's ``eachRow`` over ``legacy_customer?…&migrated_at=is.null`` in rows/s,
against its floors in the same run (DBOS has no ``eachRow``: its ``dbos`` is null).

- ``migration_create``: one create into ``customer`` per row (the seed's first migrate-customers).
  Its rows are never stamped, so they stay outstanding: the bench sets ``processes.slice_max_rows``
  to cover every row in one slice (a second slice would take the same rows again);
- ``migration_create_stamp``: that create, then an update stamping ``migrated_at`` on the legacy
  row, which takes it out of the predicate — under the default slice caps;
- ``migration_create_stamp_50k``: the same at the large size (cost flat in size);
- ``migration_connected``: the same into ``entity`` with the outbound worker on — a real ``manage.py
  qcluster`` on the bench database draining the writes to the sandbox source on the same cores; the
  table also says how long after the migration's end its last write was sent.

``customer`` and ``entity`` are connected types: each create also queues its outbound write, and a
type's writes are sent one at a time in commit order. So the connected shape writes a type of its
own (``entity``): the ``customer`` writes other benches leave queued (no worker drains them there)
are never ahead of its own in its type's lane. The source rows are seeded untimed through the records'
batch write. The engine invokes the process and performs every slice in this process (what the
async lane's worker does). A floor row is the same steps as bare SQL: a record INSERT and a ledger
INSERT, and for a stamp a record UPDATE and a ledger INSERT. The per-step floor sends them one
statement each, one transaction a step, on min(rows, ``FLOOR_ROWS``) rows. The grouped floor
groups them as the engine's batch does: the rows of one engine batch in one transaction, one
statement per kind of write for all of them (the records' INSERT, the stamps' UPDATE, the ledger
rows' INSERT, each from one JSON document as ``kernel.bulk`` and ``records.sql_merges`` send
them), on two batches' rows (at least ``BATCHED_FLOOR_ROWS``). Statements per step are counted on
the timed migration itself (see ``Migrations.run``).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass

import psycopg
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from eachrow import migrate, outbound_worker
from references import floor_seconds, scratch_connect
from shape_chains import ShapeOutcome
from shape_result import group_size, shape_result, statements_counted

from extensions.deploy import extension_deploy
from guardrails.settings import setting_clear, setting_set
from records.batch_writes import BatchWrite, CreateItem, rows_write
from records.models import RecordWriteState, WriteStatus
from records.trail import Actor

# The grouped floor's statements: a batch's record INSERT, its stamps' UPDATE, its ledger INSERT.
BATCH_RECORDS = (
    "INSERT INTO bench_record (record_type, idempotency_key, fields)"
    " SELECT 'legacy_customer', v.k, v.f FROM jsonb_to_recordset(%s::jsonb) AS v(k text, f jsonb)"
    " RETURNING id"
)
BATCH_STAMPS = (
    "UPDATE bench_record AS r SET fields = r.fields || v.f"
    " FROM jsonb_to_recordset(%s::jsonb) AS v(i bigint, f jsonb) WHERE r.id = v.i"
)
BATCH_LEDGER = (
    "INSERT INTO bench_ledger (run_id, sequence, step_id, record_id)"
    " SELECT %s, v.s, v.t, v.r FROM jsonb_to_recordset(%s::jsonb) AS v(s integer, t text, r bigint)"
)
STAMP_TARGETS = (
    "INSERT INTO bench_record (record_type, idempotency_key, fields)"
    " SELECT 'legacy_customer', %s || n, jsonb_build_object('n', n)"
    " FROM generate_series(1, %s) AS n RETURNING id"
)

FLOOR_ROWS = 200  # rows of the per-step floor
# The grouped floor's rows (two groups at least): its statements take ~40 µs a row, so a few
# hundred rows are over in milliseconds, too short to stand above the machine's noise.
BATCHED_FLOOR_ROWS = 3_000
SEED_CHUNK = 1_000
DRAIN_WAIT_S = 75  # past the 60 s target: how many were left, and the drain's rate

SOURCE = """import { defineProcess } from '@turbobase/extensions';

export default defineProcess({
  id: '__ID__',
  input: { type: 'object', properties: { batch: { type: 'string' } }, additionalProperties: false },
  eachRow: {
    outstanding: (input) =>
      `legacy_customer?select=pg_row_id,id,company_name&migrated_at=is.null&tag=eq.${input.batch}&order=id`,
    key: 'id',
  },
  steps: [
    {
      id: 'customer',
      recordType: '__TYPE__',
      build: (ctx) => ({ parent: { company_name: ctx.row!.company_name } }),
    },__STAMP__
  ],
});
"""
STAMP = """
    {
      id: 'stamp',
      recordType: 'legacy_customer',
      update: { pgRowId: (ctx) => ctx.row!.pg_row_id as string },
      rollback: 'keep',
      build: (ctx) => ({ parent: { migrated_at: '2026-12-02T00:00:00Z' } }),
    },"""
CREATE_ID, STAMP_ID = "bench:migrate-create", "bench:migrate-create-stamp"
CONNECTED_ID, CONNECTED_TYPE = "bench:migrate-connected", "entity"


def deploy(user) -> None:
    for pid, stamp, record_type in (
        (CREATE_ID, "", "customer"),
        (STAMP_ID, STAMP, "customer"),
        (CONNECTED_ID, STAMP, CONNECTED_TYPE),
    ):
        name = f"processes/{pid.split(':')[1]}.ts"
        text = SOURCE.replace("__ID__", pid).replace("__STAMP__", stamp)
        text = text.replace("__TYPE__", record_type)
        extension_deploy(entry=name, files={name: text}, by=user)


def seed(user, batch: str, rows: int) -> None:
    """``rows`` legacy customers tagged ``batch``, not migrated yet, in batch writes (untimed)."""
    actor = Actor(user=user)
    for first in range(0, rows, SEED_CHUNK):
        writes = [
            [
                BatchWrite(
                    actor,
                    "legacy_customer",
                    CreateItem(
                        {"id": f"{batch}-{n:06d}", "company_name": f"Company {n}", "tag": batch},
                        [],
                        f"seed:{batch}:{n}",
                    ),
                )
            ]
            for n in range(first, min(rows, first + SEED_CHUNK))
        ]
        with transaction.atomic():
            rows_write(rows=writes)


@dataclass
class Migrated:
    seconds: float
    statements: int
    group: int  # ledger rows one transaction wrote (the steps of its rows)


class Migrations:
    """The migration processes deployed once; each shape seeds its own batches."""

    def __init__(self) -> None:
        self.user = get_user_model().objects.get_or_create(
            username="bench-migrate", defaults={"is_staff": True}
        )[0]
        deploy(self.user)
        self.batches = 0

    def batch(self, rows: int) -> str:
        self.batches += 1
        name = f"b{self.batches:03d}"
        seed(self.user, name, rows)
        # The statistics autovacuum keeps once an import has settled (it analyzes a table after
        # 10 % of it changed, within a minute): a migration started in that minute after a bulk
        # import plans its batch's locking read on stale row counts (~50 ms a batch at 50,000).
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE record")
        return name

    def run(self, process_id: str, rows: int, batch: str | None = None) -> Migrated:
        """One migration of ``rows`` fresh rows (of ``batch`` when seeded already), timed, its
        statements counted in the same run: a migration sends few and large ones, so the
        query log's cost per statement is lost in its time (a chain's are counted apart)."""
        batch = batch or self.batch(rows)
        with statements_counted() as counted:
            started = time.perf_counter()
            run = migrate(self.user, batch, process_id)
            seconds = time.perf_counter() - started
        return Migrated(seconds, counted.count, group_size([str(run.pk)]))


def _floors(rows: int, stamped: bool, rows_per_group: int) -> tuple[float, float]:
    """(per-step floor, grouped floor) in rows/s: on min(rows, FLOOR_ROWS) rows one transaction
    a step; on two groups' rows (at least BATCHED_FLOOR_ROWS, at most ``rows``) a transaction a
    group, a statement per kind of write (``batched_floor_seconds``)."""
    row = ["create", "update"] if stamped else ["create"]
    with scratch_connect() as conn:
        per_step = floor_seconds(conn, row * min(rows, FLOOR_ROWS), 1)
        grouped_rows = min(rows, max(BATCHED_FLOOR_ROWS, 2 * rows_per_group))
        grouped = batched_floor_seconds(conn, grouped_rows, rows_per_group, stamped)
    return 1 / (per_step * len(row)), 1 / grouped


def batched_floor_seconds(conn: psycopg.Connection, rows: int, group: int, stamped: bool) -> float:
    """Seconds per row of ``rows`` rows written ``group`` rows to a transaction as the engine's
    batch writes them: one INSERT of the group's records, one UPDATE stamping as many records
    made beforehand (untimed), one INSERT of their ledger rows (each row's steps in order)."""
    group = max(1, group)
    run = uuid.uuid4()
    targets: list[int] = []
    if stamped:
        targets = [r[0] for r in conn.execute(STAMP_TARGETS, [f"stamp:{run}:", rows]).fetchall()]
    sequence = 0
    started = time.perf_counter()
    for first in range(0, rows, group):
        numbers = range(first, min(rows, first + group))
        with conn.transaction():
            made = conn.execute(
                BATCH_RECORDS,
                [json.dumps([{"k": f"floor:{run}:{n}", "f": {"n": n}} for n in numbers])],
            ).fetchall()
            ledger = []
            for n, (record,) in zip(numbers, made, strict=True):
                ledger.append({"s": sequence, "t": "customer", "r": record})
                if stamped:
                    ledger.append({"s": sequence + 1, "t": "stamp", "r": targets[n]})
                sequence += 2 if stamped else 1
            if stamped:
                stamps = [{"i": targets[n], "f": {"migrated_at": str(run)}} for n in numbers]
                conn.execute(BATCH_STAMPS, [json.dumps(stamps)])
            conn.execute(BATCH_LEDGER, [run, json.dumps(ledger)])
    return (time.perf_counter() - started) / rows


def migration_bench(shape: str, *, rows: int, migrations: Migrations | None = None) -> ShapeOutcome:
    """One migration shape of ``rows`` rows (``migration_connected`` with the worker on)."""
    m = migrations or Migrations()
    stamped = shape != "migration_create"
    pid, steps = (STAMP_ID, 2) if stamped else (CREATE_ID, 1)
    pid = CONNECTED_ID if shape == "migration_connected" else pid
    if not stamped:  # one slice, every row (see the module docstring)
        setting_set("processes.slice_max_rows", rows + 100, by=m.user)
    try:
        m.run(pid, min(rows, 20))  # warm-up: sandbox child, TypeScript, caches
        drain = None
        if shape == "migration_connected":
            done, drain = _connected(m, pid, rows)
        else:
            done = m.run(pid, rows)
    finally:
        if not stamped:
            setting_clear("processes.slice_max_rows", by=m.user)
    group = max(1, done.group // steps)
    per_step, grouped = _floors(rows, stamped, group)
    result = shape_result(
        shape,
        "rows_per_s",
        rows / done.seconds,
        statements_per_step=done.statements / (rows * steps),
        per_step_floor=per_step,
        grouped_floor=grouped,
        dbos=None,
    )
    out = ShapeOutcome(result, [("engine", f"{result['value']:10.1f} rows/s   ({rows:,} rows)")])
    out.rows += [
        ("statements per step", f"{result['statements_per_step']:10.2f}"),
        ("per-step floor (one transaction a step)", f"{result['per_step_floor']:10.1f} rows/s"),
        (
            f"grouped floor ({group} rows a transaction)",
            f"{result['grouped_floor']:10.1f} rows/s",
        ),
        ("DBOS", "null (no eachRow: no like shape)"),
    ]
    if drain is not None:
        out.rows.append(drain)
    return out


def _pending() -> int:
    return RecordWriteState.reads.filter(
        record_type=CONNECTED_TYPE, status=WriteStatus.PENDING
    ).count()


def _connected(m: Migrations, pid: str, rows: int) -> tuple[Migrated, tuple[str, str]]:
    """The migration with a real outbound worker on, and the row saying when its writes went."""
    batch = m.batch(rows)
    with outbound_worker():
        m.run(pid, 20)  # the worker's warm-up: it is up and draining
        deadline = time.monotonic() + 120
        while _pending() and time.monotonic() < deadline:
            time.sleep(0.5)
        if _pending():
            raise RuntimeError("the outbound worker did not drain the warm-up writes in 120 s")
        done = m.run(pid, rows, batch)
        left_at_end = _pending()
        ended = time.monotonic()
        while _pending() and time.monotonic() - ended < DRAIN_WAIT_S:
            time.sleep(0.5)
        drained = time.monotonic() - ended
        left = _pending()
    verdict = "met" if not left and drained <= 60 else "NOT met"
    rate = (left_at_end - left) / drained if drained else 0.0
    sent = (
        f"all sent {drained:.1f} s after its end"
        if not left
        else f"{left:,} still unsent {drained:.0f} s after its end"
    )
    row = (
        "outbound (target: all sent ≤ 60 s after the end)",
        f"{rows - left_at_end:,} of {rows:,} sent by the migration's end; {sent},"
        f" {rate:.1f} writes/s ({verdict})",
    )
    return done, row


def flatness_row(small: dict, large: dict) -> tuple[str, str]:
    """The large migration's rate over the small one's (target ≥ 0.9: cost flat in size)."""
    ratio = large["value"] / small["value"]
    verdict = "met" if ratio >= 0.9 else "NOT met"
    return ("large rate / small rate (target ≥ 0.9)", f"{ratio:10.2f}   ({verdict})")
