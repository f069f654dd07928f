"""Migration bench: rows/s of a one-create-step eachRow migration of app-owned records, against a
bare loop of the same boundary creates (same record type, same fields, same idempotency keys), in
the same run.

The source rows are ``migration_item`` records of a batch; the one step creates a
``legacy_customer`` (app-owned: no outbound write) per row. The engine side invokes the process and
performs every slice in this process (what the async lane's worker does). Seeding the rows is not
timed.

The rows are never marked (one step), so they stay outstanding: a slice takes the first
``processes.slice_max_rows`` of the read, and a second slice would take the same rows again (offered
again, writing nothing) until ``processes.slice_cap`` — a one-create-step migration larger than one
slice does not finish. The bench therefore sets the slice's row budget to cover every row on its
throwaway database: one slice, every row. ``bench/migration.py`` is the two-writes-per-row tracked variant.

With ``connected`` the same migration also runs into ``customer`` (a connected type: every record
gets its outbound write, a batch wakes the outbound worker once) while a real ``manage.py
qcluster`` on the bench database drains the writes to the sandbox source, competing for the same
cores; the table shows that rate and how many writes the worker had sent by the migration's end.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator

from django.contrib.auth import get_user_model
from django.db import connection
from sync_invoke import ROOT, bench_database_url, stop

from extensions.deploy import extension_deploy
from guardrails.settings import setting_set
from processes.engine.runner import run_deliver
from processes.invoke import run_invoke
from processes.models import ProcessRun, RunState
from records.boundary import record_create
from records.models import Record, RecordWriteState, WriteStatus
from records.signals import outbound_write_queued
from records.trail import Actor
from sources.apps import _on_outbound_write_queued

from support import items_make

PROCESS_ID = "bench:eachrow-create"
SOURCE = """import { defineProcess } from '@turbobase/extensions';

export default defineProcess({
  id: '__ID__',
  input: { type: 'object', properties: { batch: { type: 'string' } }, additionalProperties: false },
  eachRow: {
    outstanding: (input) =>
      `migration_item?select=legacy_id,company_name&batch=eq.${input.batch}&order=legacy_id`,
    key: 'legacy_id',
  },
  steps: [
    {
      id: 'create',
      recordType: 'legacy_customer',
      build: (ctx) => ({ parent: { legacy_id: ctx.row!.legacy_id, company_name: ctx.row!.company_name } }),
    },
  ],
});
""".replace("__ID__", PROCESS_ID)
CONNECTED_ID = "bench:eachrow-connected"
CONNECTED = (
    SOURCE.replace(PROCESS_ID, CONNECTED_ID)
    .replace("'legacy_customer'", "'customer'")
    .replace("legacy_id: ctx.row!.legacy_id, ", "")
)


def migrate(user, batch: str, process_id: str = PROCESS_ID) -> ProcessRun:
    run = run_invoke(process_id=process_id, body={"batch": batch}, user=user)
    while ProcessRun.objects.get(pk=run.pk).state in (RunState.QUEUED, RunState.RUNNING):
        run_deliver(str(run.pk))  # each delivery is one slice, as on the async lane
    run.refresh_from_db()
    if run.state != RunState.COMMITTED or run.outstanding:
        raise RuntimeError(f"the migration ended {run.state}: {run.reason}")
    return run


@contextlib.contextmanager
def outbound_worker() -> Iterator[None]:
    """The outbound wake-up connected (the suite's database runs without it) and a real qcluster
    on the bench database (the ORM broker) draining what the migration queues."""
    env = dict(os.environ, DATABASE_URL=bench_database_url(), TURBOBASE_BROKER="orm")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    log_path = ROOT / "var" / "bench-eachrow-qcluster.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # Connected only for the block, unless it already was (a test database): then it stays.
    uid = "sources.outbound_wake"
    was_connected = any(key[0] == uid for key, *_ in outbound_write_queued.receivers)
    outbound_write_queued.connect(_on_outbound_write_queued, dispatch_uid=uid)
    with log_path.open("ab") as log:
        cluster = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "qcluster"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            yield
        finally:
            connection.close()
            stop(cluster)
            if not was_connected:
                outbound_write_queued.disconnect(dispatch_uid=uid)


def _pending() -> int:
    return RecordWriteState.reads.filter(record_type="customer", status=WriteStatus.PENDING).count()


def connected_bench(user, actor: Actor, rows: int) -> dict:
    """rows/s of the same migration into a connected type with the outbound worker on."""
    extension_deploy(
        entry="processes/connected.ts", files={"processes/connected.ts": CONNECTED}, by=user
    )
    items_make(actor, "cwarm", 20)
    items_make(actor, "connected", rows)
    with outbound_worker():
        migrate(user, "cwarm", CONNECTED_ID)
        deadline = time.monotonic() + 120
        while _pending() and time.monotonic() < deadline:  # the worker is up and draining
            time.sleep(0.5)
        if _pending():
            raise RuntimeError("the outbound worker did not drain the warm-up writes in 120 s")
        started = time.perf_counter()
        migrate(user, "connected", CONNECTED_ID)
        seconds = time.perf_counter() - started
        left = _pending()
    return {"rows_per_s": round(rows / seconds, 1), "sent_by_end": rows - left}


def eachrow_bench(*, rows: int = 1000, connected: bool = True) -> dict:
    user = get_user_model().objects.create_user(
        username="bench-migration", password="bench", is_staff=True
    )
    actor = Actor(user=user)
    extension_deploy(entry="processes/eachrow.ts", files={"processes/eachrow.ts": SOURCE}, by=user)
    setting_set("processes.slice_max_rows", rows + 100, by=user)  # one slice, every row (see above)
    items_make(actor, "warm", 20)
    items_make(actor, "engine", rows)
    bare_items = items_make(actor, "bare", rows)
    migrate(user, "warm")  # warm-up: sandbox child, TypeScript, caches

    started = time.perf_counter()
    migrate(user, "engine")
    engine_s = time.perf_counter() - started

    started = time.perf_counter()
    for item in bare_items:
        legacy_id = item.fields["legacy_id"]
        record_create(
            actor=actor,
            record_type="legacy_customer",
            parent={"legacy_id": legacy_id, "company_name": item.fields["company_name"]},
            idempotency_key=f"row:bench:{legacy_id}:create",
        )
    bare_s = time.perf_counter() - started

    moved = Record.reads.filter(
        record_type="legacy_customer", fields__legacy_id__startswith="engine-"
    ).count()
    if moved != rows:
        raise RuntimeError(f"the migration created {moved} records for {rows} rows")
    extra = {"connected": connected_bench(user, actor, rows)} if connected else {}
    return {
        **extra,
        "bench": "migration",
        "rows": rows,
        "rows_per_s": round(rows / engine_s, 1),
        "bare_rows_per_s": round(rows / bare_s, 1),
        "engine_over_bare": round(engine_s / bare_s, 2),
    }
