"""Demo data of the processes room, loaded by ``manage.py tb_demo`` (``make run``).

Deploys the demo project (``demo/`` at the top of the source tree: the seed's example processes
``acme:migrate-customers-tracked``, ``acme:raise-po-and-bill`` and seed 004's
``acme:trial-to-paid``, a hook and a nightly schedule) through the same reader the ``turbobase``
CLI uses (``extensions.project``), as one bundle — unchanged code stores no new version, so this
is safe on every start, and ``turbobase ext plan --to local`` from ``demo/`` right after reports
everything unchanged — and generates a batch of ``migration_item`` rows for the
migration to move, owned by the demo user, through the write boundary. Then::

    POST /v1/processes/acme:migrate-customers-tracked   {"batch": "2026-10"}

(signed in as demo/demo) and watch the run take the batch in slices until nothing is outstanding.

It also starts one ``acme:trial-to-paid`` run (once per database: its key is fixed) so a newcomer
sees each wait in the admin: ``awaitingTime`` for a minute, ``awaitingInput`` for five (until an
``order.paid`` event for its customer), then ``awaitingAction`` with a task in demo's Inbox.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings

from extensions.bundle import bundle_apply
from extensions.models import DeployOutcome
from extensions.project import project_bundle
from processes.invoke import run_start
from processes.models import ProcessRun
from records.boundary import record_create
from records.models import Record
from records.trail import Actor

DEMO_PROJECT = Path(settings.BASE_DIR) / "demo"
DEMO_BATCH = "2026-10"
DEMO_BATCH_ROWS = 200
DEMO_TRIAL_KEY = "demo:trial-to-paid:first"
DEMO_TRIAL_CUSTOMER = "Demo Trial Co"


def demo_processes_deploy(*, admin: Any) -> list[dict[str, Any]]:
    """Deploy the demo project as the administrator; answer the bundle's module outcomes."""
    return bundle_apply(data=project_bundle(DEMO_PROJECT), by=admin)["modules"]


def migration_batch_generate(
    *, user: Any, batch: str = DEMO_BATCH, rows: int = DEMO_BATCH_ROWS
) -> int:
    """``rows`` pending ``migration_item`` rows of ``batch``, each keyed so a rerun writes none twice;
    answer how many were new."""
    actor = Actor(user=user)
    keys = [f"demo:migration_item:{batch}:{n:04d}" for n in range(1, rows + 1)]
    existing = set(
        Record.reads.filter(idempotency_key__in=keys).values_list("idempotency_key", flat=True)
    )
    created = 0
    for n, key in enumerate(keys, start=1):
        if key in existing:
            continue
        result = record_create(
            actor=actor,
            record_type="migration_item",
            idempotency_key=key,
            parent={
                "legacy_id": f"M-{batch}-{n:04d}",
                "company_name": f"Demo Company {n:04d}",
                "status": "pending",
                "batch": batch,
            },
        )
        created += result.is_new
    return created


def demo_load(*, admin: Any, user: Any, write: Callable[[str], Any]) -> None:
    """The ``tb_demo`` hook."""
    deployed = demo_processes_deploy(admin=admin)
    fresh = [m["id"] for m in deployed if m["outcome"] != DeployOutcome.UNCHANGED]
    if fresh:
        write(f"demo extensions deployed: {', '.join(fresh)}")
    created = migration_batch_generate(user=user)
    if created:
        write(
            f"demo migration batch {DEMO_BATCH}: {created} pending migration_item rows "
            f'(invoke acme:migrate-customers-tracked with {{"batch": "{DEMO_BATCH}"}})'
        )
    if ProcessRun.objects.filter(idempotency_key=DEMO_TRIAL_KEY).exists():
        return
    trial = run_start(
        process_id="acme:trial-to-paid",
        body={"customer": DEMO_TRIAL_CUSTOMER},
        user=user,
        idempotency_key=DEMO_TRIAL_KEY,
    )
    write(
        f"demo trial-to-paid run {trial.run_id}: a minute awaitingTime, five awaitingInput "
        f'(POST /v1/events {{"name": "order.paid", "data": {{"customer": "{DEMO_TRIAL_CUSTOMER}"}}}}), '
        "then awaitingAction with a task in demo's Inbox"
    )
