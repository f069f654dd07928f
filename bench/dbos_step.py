"""DBOS Transact's transactional step, measured in its own process (``bench/suite.py`` starts it).

    python bench/dbos_step.py --app-url postgres://…/bench_db --sys-url postgres://…/bench_db_dbos [--rounds 7]

DBOS 3.x has no ``@DBOS.transaction`` any more: a transaction step is a function decorated by a
``SQLAlchemyDatasource``'s ``transaction()`` (its default isolation, SERIALIZABLE), run inside a
``@DBOS.workflow``. Each step does the floor's record INSERT into ``bench_record`` of the bench
database; DBOS adds its checkpoint row in the same transaction and its own workflow bookkeeping in
the system database (a separate database on the same server). The per-step cost is the marginal
one, like the engine's: (a LONG-step workflow − a SHORT-step workflow) / (LONG − SHORT), median of
rounds. Prints one JSON line ``{"step_us": …, "workflow_us": …}`` on stdout.

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

LONG, SHORT = 20, 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--app-url", required=True)
    parser.add_argument("--sys-url", required=True)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)

    import sqlalchemy as sa
    from dbos import DBOS, SQLAlchemyDatasource

    sa_url = args.app_url.replace("postgres://", "postgresql+psycopg://", 1)
    sys_url = args.sys_url.replace("postgres://", "postgresql+psycopg://", 1)
    DBOS(config={"name": "turbobase-bench", "system_database_url": sys_url, "log_level": "WARNING"})
    ds = SQLAlchemyDatasource.create(sa_url)

    @ds.transaction()
    def record_insert(run: str, n: int) -> int:
        return (
            ds.sql_session()
            .execute(
                sa.text(
                    "INSERT INTO bench_record (record_type, idempotency_key, fields)"
                    " VALUES ('legacy_customer', :key, CAST(:fields AS jsonb)) RETURNING id"
                ),
                {"key": f"dbos:{run}:{n}", "fields": json.dumps({"n": n, "run": run})},
            )
            .scalar_one()
        )

    @DBOS.workflow()
    def chain(steps: int) -> int:
        run = str(uuid.uuid4())
        for n in range(steps):
            record_insert(run, n)
        return steps

    DBOS.launch()
    try:
        chain(LONG), chain(SHORT)  # warm-up: pools, prepared metadata
        marginal, whole = [], []
        for _ in range(args.rounds):
            started = time.perf_counter()
            chain(LONG)
            long_s = time.perf_counter() - started
            started = time.perf_counter()
            chain(SHORT)
            short_s = time.perf_counter() - started
            marginal.append((long_s - short_s) / (LONG - SHORT))
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
