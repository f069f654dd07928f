"""DBOS Transact's transactional step, measured in its own process (``bench/suite.py`` starts it).

    python bench/dbos_step.py --app-url postgres://…/bench_db --sys-url postgres://…/bench_db_dbos \
        [--rounds 7] [--shape create|single|update|delete|mixed] [--long 20] [--short 2]

DBOS 3.x has no ``@DBOS.transaction`` any more: a transaction step is a function decorated by a
``SQLAlchemyDatasource``'s ``transaction()`` (its default isolation, SERIALIZABLE), run inside a
``@DBOS.workflow``. Each step does the floor's write (``bench/references.py``) in ``bench_record``
of the bench database — an INSERT (``create``), an UPDATE or a DELETE of a record made before the
clock starts (``update``, ``delete``), or, in ``mixed``, repeated: an INSERT, an UPDATE of that
record, a SELECT of it and an INSERT; DBOS adds its checkpoint row in the same transaction and its
own workflow bookkeeping in the system database (a separate database on the same server). The
per-step cost is the marginal one, like the engine's: (a LONG-step workflow − a SHORT-step
workflow) / (LONG − SHORT), median of rounds; ``single`` is a whole one-step workflow. Prints one
JSON line ``{"step_us": …, "workflow_us": …}`` on stdout.

A separate process because DBOS owns global state (its executor, its logging, signal handling),
and so it never shares an interpreter with the Django side it is compared against.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid

# The steps of a shape's workflow, repeated: as ``bench/references.py`` names them.
KINDS = {
    "create": ("create",),
    "single": ("create",),
    "update": ("update",),
    "delete": ("delete",),
    "mixed": ("create", "update_new", "query_create"),
}
SHAPES = tuple(KINDS)
INSERT = (
    "INSERT INTO bench_record (record_type, idempotency_key, fields)"
    " VALUES ('legacy_customer', :key, CAST(:fields AS jsonb)) RETURNING id"
)
UPDATE = "UPDATE bench_record SET fields = CAST(:fields AS jsonb) WHERE id = :id"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--app-url", required=True)
    parser.add_argument("--sys-url", required=True)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--shape", choices=SHAPES, default="create")
    parser.add_argument("--long", type=int, default=20)
    parser.add_argument("--short", type=int, default=2)
    args = parser.parse_args(argv)

    import sqlalchemy as sa
    from dbos import DBOS, SQLAlchemyDatasource

    sa_url = args.app_url.replace("postgres://", "postgresql+psycopg://", 1)
    sys_url = args.sys_url.replace("postgres://", "postgresql+psycopg://", 1)
    DBOS(config={"name": "turbobase-bench", "system_database_url": sys_url, "log_level": "WARNING"})
    ds = SQLAlchemyDatasource.create(sa_url)

    def insert(key: str, fields: dict) -> int:
        sql = sa.text(INSERT)
        params = {"key": key, "fields": json.dumps(fields)}
        return ds.sql_session().execute(sql, params).scalar_one()

    @ds.transaction()
    def record_insert(run: str, n: int) -> int:
        return insert(f"dbos:{run}:{n}", {"n": n, "run": run})

    @ds.transaction()
    def record_update(record_id: int, run: str, n: int) -> int:
        params = {"id": record_id, "fields": json.dumps({"n": n, "run": run})}
        ds.sql_session().execute(sa.text(UPDATE), params)
        return record_id

    @ds.transaction()
    def record_delete(record_id: int) -> int:
        ds.sql_session().execute(
            sa.text("DELETE FROM bench_record WHERE id = :id"), {"id": record_id}
        )
        return record_id

    @ds.transaction()
    def query_insert(record_id: int, run: str, n: int) -> int:
        seen = ds.sql_session().execute(
            sa.text("SELECT fields FROM bench_record WHERE id = :id"), {"id": record_id}
        )
        return insert(f"dbos:{run}:{n}", {"n": n, "seen": seen.scalar_one_or_none()})

    @DBOS.workflow()
    def chain(shape: str, steps: int, targets: list[int]) -> int:
        run = str(uuid.uuid4())
        last = 0
        for n in range(steps):
            kind = KINDS[shape][n % len(KINDS[shape])]
            if kind == "create":
                last = record_insert(run, n)
            elif kind == "update":
                record_update(targets[n], run, n)
            elif kind == "delete":
                record_delete(targets[n])
            elif kind == "update_new":
                record_update(last, run, n)
            else:
                last = query_insert(last, run, n)
        return steps

    @ds.transaction()
    def targets_make(count: int) -> list[int]:
        """Records for update and delete steps to address, made before the clock starts."""
        run = str(uuid.uuid4())
        return [insert(f"dbos-target:{run}:{n}", {"n": n}) for n in range(count)]

    def timed(steps: int) -> float:
        targets = targets_make(steps) if args.shape in ("update", "delete") else []
        started = time.perf_counter()
        chain(args.shape, steps, targets)
        return time.perf_counter() - started

    DBOS.launch()
    try:
        long, short = (1, 0) if args.shape == "single" else (args.long, args.short)
        timed(long), timed(short)  # warm-up: pools, prepared metadata
        marginal, whole = [], []
        for _ in range(args.rounds):
            long_s = timed(long)
            short_s = timed(short) if short else 0.0
            marginal.append((long_s - short_s) / (long - short))
            whole.append(long_s)
    finally:
        DBOS.destroy()
        ds.engine.dispose()
    print(
        json.dumps(
            {
                "step_us": statistics.median(marginal) * 1e6,
                "workflow_us": statistics.median(whole) * 1e6,
                "version": _version(),
            }
        )
    )
    return 0


def _version() -> str:
    from importlib.metadata import version

    return version("dbos")


if __name__ == "__main__":
    sys.exit(main())
