"""The references an engine figure is divided by, measured in the same run: the floor and DBOS.

The floor is the bare SQL a step must do, sent by psycopg on the bench database into the scratch
tables ``bench_record`` / ``bench_ledger`` made here: a step's record write (an INSERT, an UPDATE
or a DELETE; a ``ctx.query`` step also its SELECT) and its ledger INSERT. ``floor_seconds``
performs a list of such steps ``group`` to a transaction: 1 is the per-step floor (one commit a
step), the engine's group size the grouped floor (one commit per group, ÷ the steps). One
statement per write, as written here: a floor never batches rows into multi-row statements.

DBOS is its transactional step doing the same writes in a workflow (``bench/dbos_step.py``, its
own process and its own system database on the same server), or None with the reason when it
cannot run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import psycopg
from django.db import connection
from sync_invoke import bench_database_url

HERE = Path(__file__).resolve().parent

SCRATCH_DDL = (
    "CREATE TABLE IF NOT EXISTS bench_record (id bigserial PRIMARY KEY, record_type text NOT NULL,"
    " idempotency_key text UNIQUE, fields jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())",
    "CREATE TABLE IF NOT EXISTS bench_ledger (id bigserial PRIMARY KEY, run_id uuid NOT NULL,"
    " sequence integer NOT NULL, step_id text NOT NULL, record_id bigint,"
    " created_at timestamptz NOT NULL DEFAULT now(), UNIQUE (run_id, sequence))",
)
RECORD_INSERT = (
    "INSERT INTO bench_record (record_type, idempotency_key, fields)"
    " VALUES ('legacy_customer', %s, %s) RETURNING id"
)
RECORD_UPDATE = "UPDATE bench_record SET fields = %s WHERE id = %s"
RECORD_DELETE = "DELETE FROM bench_record WHERE id = %s"
RECORD_SELECT = "SELECT fields FROM bench_record WHERE id = %s"
LEDGER_INSERT = (
    "INSERT INTO bench_ledger (run_id, sequence, step_id, record_id) VALUES (%s, %s, %s, %s)"
)

# The kinds of step a floor performs. ``update`` / ``delete`` address a record made beforehand
# (untimed); ``update_new`` / ``query_create`` the record the last ``create`` made (a mixed chain).
KINDS = ("create", "update", "delete", "update_new", "query_create")


def database_url() -> str:
    """The bench database as a libpq URL (the connection Django is on now)."""
    return bench_database_url()


def scratch_connect() -> psycopg.Connection:
    """An autocommit connection to the bench database with the scratch tables made."""
    conn = psycopg.connect(database_url(), autocommit=True)
    for ddl in SCRATCH_DDL:
        conn.execute(ddl)
    return conn


class _FloorRun:
    """One floor run's steps on the scratch tables: its own run id, its own ledger positions."""

    def __init__(self, conn: psycopg.Connection, targets: list[int]) -> None:
        self.conn, self.targets = conn, targets
        self.run = uuid.uuid4()
        self.sequence = 0
        self.last: int | None = None

    def _ledger(self, record_id: int | None) -> None:
        self.conn.execute(LEDGER_INSERT, [self.run, self.sequence, f"s{self.sequence}", record_id])
        self.sequence += 1

    def _create(self, fields: dict) -> None:
        key = f"floor:{self.run}:{self.sequence}"
        row = self.conn.execute(RECORD_INSERT, [key, json.dumps(fields)]).fetchone()
        self.last = row[0] if row else None
        self._ledger(self.last)

    def step(self, kind: str) -> None:
        n = {"n": self.sequence}
        if kind == "create":
            self._create(n)
        elif kind == "update":
            target = self.targets.pop()
            self.conn.execute(RECORD_UPDATE, [json.dumps({**n, "run": str(self.run)}), target])
            self._ledger(target)
        elif kind == "delete":
            target = self.targets.pop()
            self.conn.execute(RECORD_DELETE, [target])
            self._ledger(target)
        elif kind == "update_new":
            self.conn.execute(RECORD_UPDATE, [json.dumps({**n, "note": "updated"}), self.last])
            self._ledger(self.last)
        elif kind == "query_create":
            seen = self.conn.execute(RECORD_SELECT, [self.last]).fetchone()
            self._create({**n, "seen": seen[0] if seen else None})
        else:
            raise ValueError(f"unknown floor step kind {kind!r}")


def _targets(conn: psycopg.Connection, count: int) -> list[int]:
    """``count`` records for update and delete steps to address, made before the clock starts."""
    if not count:
        return []
    rows = conn.execute(
        "INSERT INTO bench_record (record_type, idempotency_key, fields)"
        " SELECT 'legacy_customer', %s || n, jsonb_build_object('n', n)"
        " FROM generate_series(1, %s) AS n RETURNING id",
        [f"target:{uuid.uuid4()}:", count],
    ).fetchall()
    return [row[0] for row in rows]


def floor_seconds(conn: psycopg.Connection, kinds: Sequence[str], group: int) -> float:
    """Seconds per step of ``kinds`` done in order, ``group`` steps to a transaction."""
    group = max(1, group)
    targets = _targets(conn, sum(1 for k in kinds if k in ("update", "delete")))
    floor = _FloorRun(conn, targets)
    started = time.perf_counter()
    for first in range(0, len(kinds), group):
        with conn.transaction():
            for kind in kinds[first : first + group]:
                floor.step(kind)
    return (time.perf_counter() - started) / len(kinds)


def dbos_measure(
    *, rounds: int, shape: str = "create", long: int = 20, short: int = 2
) -> tuple[float | None, str]:
    """DBOS's seconds per step of ``shape`` (marginal: (a ``long``-step workflow − a
    ``short``-step one) ÷ the difference; ``single``: a whole one-step workflow), in a subprocess
    on its own system database; (None, why) when it cannot run."""
    try:
        import dbos  # noqa: F401 — only whether it is installed (requirements-bench.txt)
    except ImportError:
        return None, "dbos is not installed (pip install -r requirements-bench.txt)"
    url = database_url()
    with scratch_connect():
        pass  # the scratch tables DBOS writes into
    sys_db = connection.settings_dict["NAME"] + "_dbos"
    sys_url = url.rsplit("/", 1)[0] + "/" + sys_db
    argv = [sys.executable, str(HERE / "dbos_step.py"), "--app-url", url, "--sys-url", sys_url]
    argv += ["--rounds", str(rounds), "--shape", shape, "--long", str(long), "--short", str(short)]
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=float(os.environ.get("BENCH_DBOS_TIMEOUT", "600")),
        )
    except subprocess.TimeoutExpired:
        return None, "the DBOS subprocess did not finish in time"
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{sys_db}" WITH (FORCE)')
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return None, f"the DBOS subprocess failed: {tail[0]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    note = f"dbos {out['version']}, whole {long}-step workflow {out['workflow_us'] / 1000:.1f} ms"
    return out["step_us"] / 1e6, note
