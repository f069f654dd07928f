"""Migration bench: rows/s of a one-create-step eachRow migration of app-owned records, against a
bare loop of the same boundary creates (same record type, same fields, same idempotency keys), in
the same run.

The source rows are ``migration_item`` records of a batch; the one step creates a
``legacy_customer`` (app-owned: no outbound write) per row. The engine side invokes the process and
performs every slice in this process (what the async lane's worker does). Seeding the rows is not
timed.

The rows are never marked (one step), so they stay outstanding: a slice takes the first
``PROCESS_SLICE_MAX_ROWS`` of the read, and a second slice would take the same rows again (offered
again, writing nothing) until ``processes.slice_cap`` — a one-create-step migration larger than one
slice does not finish. The bench therefore sets the slice's row budget to cover every row on its
throwaway database: one slice, every row. ``bench/migration.py`` is the two-writes-per-row tracked variant.
"""

from __future__ import annotations

import time

from django.contrib.auth import get_user_model

from extensions.deploy import extension_deploy
from guardrails.settings import setting_set
from processes.engine.runner import run_deliver
from processes.invoke import run_invoke
from processes.models import ProcessRun, RunState
from records.boundary import record_create
from records.models import Record
from records.trail import Actor

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


def migrate(user, batch: str) -> ProcessRun:
    run = run_invoke(process_id=PROCESS_ID, body={"batch": batch}, user=user)
    while ProcessRun.objects.get(pk=run.pk).state in (RunState.QUEUED, RunState.RUNNING):
        run_deliver(str(run.pk))  # each delivery is one slice, as on the async lane
    run.refresh_from_db()
    if run.state != RunState.COMMITTED or run.outstanding:
        raise RuntimeError(f"the migration ended {run.state}: {run.reason}")
    return run


def eachrow_bench(*, rows: int = 1000) -> dict:
    user = get_user_model().objects.create_user(
        username="bench-migration", password="bench", is_staff=True
    )
    actor = Actor(user=user)
    extension_deploy(entry="processes/eachrow.ts", files={"processes/eachrow.ts": SOURCE}, by=user)
    setting_set("PROCESS_SLICE_MAX_ROWS", rows + 100, by=user)  # one slice, every row (see above)
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
    return {
        "bench": "migration",
        "rows": rows,
        "rows_per_s": round(rows / engine_s, 1),
        "bare_rows_per_s": round(rows / bare_s, 1),
        "engine_over_bare": round(engine_s / bare_s, 2),
    }
