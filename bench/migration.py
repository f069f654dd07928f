"""Migration bench: rows/s of the seed's tracked migration through the engine against the same two
writes per row (create the customer, stamp the item) through the bare boundary, in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/turbobase .venv/bin/python bench/migration.py [--rows 2000]

The engine side invokes ``acme:migrate-customers-tracked`` and performs its slices in this process
(what the async lane's worker does: one outstanding read per slice, the sandbox, a boundary write
and a ledger row per step). The bare side writes the same records with the same idempotency keys.
Outbound sending is not measured (no worker drains it). Target: at most 2x.
"""

from __future__ import annotations

import argparse
import sys

# support sets up Django first: the imports below need it.
from support import ROOT, bench_database, items_make, ratio_line, timed

# isort: split

from django.contrib.auth import get_user_model  # noqa: E402

from extensions.deploy import extension_deploy  # noqa: E402
from processes.engine.runner import run_deliver  # noqa: E402
from processes.invoke import run_invoke  # noqa: E402
from processes.models import ProcessRun, RunState  # noqa: E402
from records.boundary import record_create, record_update  # noqa: E402
from records.trail import Actor  # noqa: E402

TARGET = 2.0
FIXTURE = ROOT / "tests" / "extensions" / "fixtures" / "processes" / "migrate-customers-tracked.ts"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument(
        "--with-outbound",
        action="store_true",
        help="keep the outbound enqueue on connected creates (tasks stay queued)",
    )
    args = parser.parse_args(argv)
    with bench_database(with_outbound=args.with_outbound) as vendor:
        user = get_user_model().objects.create_user(
            username="bench", password="bench", is_staff=True
        )
        actor = Actor(user=user)
        extension_deploy(
            entry="processes/tracked.ts",
            files={"processes/tracked.ts": FIXTURE.read_text()},
            by=user,
        )
        items_make(actor, "warm", 20)
        engine_items = items_make(actor, "engine", args.rows)
        bare_items = items_make(actor, "bare", args.rows)

        def engine() -> None:
            for batch in ("warm", "engine"):
                run = run_invoke(
                    process_id="acme:migrate-customers-tracked", body={"batch": batch}, user=user
                )
                while ProcessRun.objects.get(pk=run.pk).state in (
                    RunState.QUEUED,
                    RunState.RUNNING,
                ):
                    run_deliver(str(run.pk))  # each delivery is one slice, as on the async lane
                assert ProcessRun.objects.get(pk=run.pk).state == RunState.COMMITTED

        def bare() -> None:
            for item in bare_items:
                created = record_create(
                    actor=actor,
                    record_type="customer",
                    parent={"company_name": item.fields["company_name"]},
                    idempotency_key=f"row:bench:{item.fields['legacy_id']}:create",
                ).record
                record_update(
                    actor=actor,
                    record_type="migration_item",
                    pg_row_id=item.pk,
                    parent={"status": "sent", "target_pg_row_id": str(created.pk)},
                )

        engine_s = timed(engine)
        bare_s = timed(bare)
        slices = (
            ProcessRun.objects.filter(input={"batch": "engine"})
            .values_list("slices", flat=True)
            .first()
        )
        print(
            f"Turbobase migration bench — {vendor}, {args.rows} rows, two writes per row, {slices} slice(s)"
        )
        print(ratio_line("tracked migration", engine_s, bare_s, args.rows, "rows", TARGET))
        del engine_items
    return 0


if __name__ == "__main__":
    sys.exit(main())
