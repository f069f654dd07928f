"""A delivery's hold on its run: taken by a conditional UPDATE, kept alive by a heartbeat,
checked inside every transaction that writes for the run.

The run row's ``lease_owner`` names the one delivery that may write for the run and
``lease_until`` says until when. A heartbeat thread renews it (conditionally, on ``lease_owner``)
every third of the lease while the delivery works, so a long step — a slow ``ctx.query``, a
``build`` that computes for a while — never lets a second worker take a live run. If the worker
dies, renewal stops and the lease runs out; the next delivery resumes at the first unrecorded step.

Should a delivery lose its lease anyway (frozen past it: the process was stopped, the database
unreachable), ``hold`` fails inside the step's transaction and the step rolls back: a delivery
that lost its lease writes nothing. On PostgreSQL the UPDATE also locks the run row until the
step commits, so a claim by another worker waits for the step and then finds the lease renewed.

A step's ledger row proves the lease with ``hold_writing``: on PostgreSQL one statement renews the
lease, inserts the row only if the lease is ours, and reads the run's cancel request back
(``cancel_seen``), so the stop check at the next step boundary costs no SELECT of its own.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import connection, connections, models, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

from kernel.rows import bound_cursor, row_insert, row_inserted
from processes.models import ProcessRun

logger = logging.getLogger("turbobase.processes.engine")


def lease_seconds() -> float:
    return float(getattr(settings, "PROCESS_RUN_LEASE_S", 120))


def _field(model: type[models.Model], name: str) -> models.Field:
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return field


def _quoted(conn: BaseDatabaseWrapper, model: type[models.Model], name: str) -> str:
    return conn.ops.quote_name(str(_field(model, name).column))


@lru_cache(maxsize=64)
def _held_sql(
    alias: str, names: tuple[str, ...]
) -> tuple[str, tuple[models.Field, ...], models.Field]:
    """The text of ``_held_update`` for the ``names`` columns on database ``alias``, and the
    fields preparing their values: the text depends on nothing else, and building it (field
    lookups, quoting) cost more than the rest of a step's hold."""
    conn = connections[alias]
    assignments = ", ".join(f"{_quoted(conn, ProcessRun, name)} = %s" for name in names)
    sql = (
        f"UPDATE {conn.ops.quote_name(ProcessRun._meta.db_table)} SET {assignments} "
        f"WHERE {_quoted(conn, ProcessRun, 'run_id')} = %s "
        f"AND {_quoted(conn, ProcessRun, 'lease_owner')} = %s "
        f"RETURNING {_quoted(conn, ProcessRun, 'cancel_requested')}"
    )
    return sql, tuple(_field(ProcessRun, name) for name in names), _field(ProcessRun, "run_id")


def _held_update(
    conn: BaseDatabaseWrapper, sets: dict[str, Any], run_id: Any, token: str
) -> tuple[str, list]:
    """``UPDATE`` of the run's ``sets`` columns where ``token`` holds its lease, answering the
    run's ``cancel_requested``, and its params."""
    sql, fields, run_id_field = _held_sql(conn.alias, tuple(sets))
    params = [
        field.get_db_prep_save(value, conn)
        for field, value in zip(fields, sets.values(), strict=True)
    ]
    params.append(run_id_field.get_db_prep_value(run_id, conn))
    params.append(token)
    return sql, params


class LeaseLost(Exception):
    """Another delivery holds the run now (ours ran out): this one must write nothing more."""


class Lease:
    """One delivery's hold on one run (``token`` is written to ``lease_owner`` by the claim)."""

    def __init__(self, run_id, token: str) -> None:
        self.run_id = run_id
        self.token = token
        self.seconds = lease_seconds()
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        # The run's cancel_requested as the last step's transaction read it (or the claim did).
        self.cancel_seen = False

    def hold(self, **columns: Any) -> None:
        """Inside a write's transaction: prove we still hold the run and extend the lease (and set
        ``columns`` on the run row in the same statement). Raises ``LeaseLost`` otherwise. The
        statement reads the run's cancel request back (``cancel_seen``): every hold — a step's, a
        migration batch's, the heartbeat's — is also the stop check's look at it."""
        conn = connections[router.db_for_write(ProcessRun)]
        gate, params = self.gate(**columns)
        with conn.cursor() as cursor:
            cursor.execute(gate, params)
            self.gate_answered(cursor.fetchone())

    def hold_writing(self, row: models.Model, **columns: Any) -> None:
        """``hold(**columns)`` and INSERT ``row`` (a ledger row) in the same transaction — on
        PostgreSQL in one statement: a CTE renews the lease, the INSERT takes its values from the
        CTE's row (no row, no insert: ``LeaseLost``) and the statement answers the new row's id
        and the run's ``cancel_requested``, kept as ``cancel_seen``."""
        db = router.db_for_write(type(row), instance=row)
        conn = connections[db]
        if conn.vendor != "postgresql":  # SQLite has no data-modifying CTE: two statements
            self.hold(**columns)
            row.save(force_insert=True, using=db)
            return
        gate, params = self.gate(**columns)
        written = row_insert(conn, row)
        pk = conn.ops.quote_name(str(row._meta.pk.column))
        sql = (
            f"WITH held AS ({gate}), "
            f"written AS ({written.head} SELECT {written.values} FROM held RETURNING {pk}) "
            f"SELECT held.*, written.{pk} FROM held, written"
        )
        with bound_cursor(conn) as cursor:
            cursor.execute(sql, params + written.params)
            answer = cursor.fetchone()
        self.gate_answered(answer)
        row_inserted(row, db, answer[-1])

    def gate(self, **columns: Any) -> tuple[str, list]:
        """The statement of a hold: the conditional UPDATE renewing the lease (and setting
        ``columns``), answering ``cancel_requested`` — alone (``hold``), in a CTE before a ledger
        row (``hold_writing``), or as the gate of a write that carries the ledger row in its own
        statement (``records.boundary.rides_commit``). Its answer goes to ``gate_answered``."""
        conn = connections[router.db_for_write(ProcessRun)]
        sets = {"lease_until": timezone.now() + timedelta(seconds=self.seconds), **columns}
        return _held_update(conn, sets, self.run_id, self.token)

    def gate_answered(self, answer: tuple | None) -> None:
        """What a ``gate`` statement answered: None (no row) when the lease was taken over."""
        if answer is None:
            raise LeaseLost(f"run {self.run_id}: this delivery's lease was taken over")
        self.cancel_seen = bool(answer[0])

    def let_go(self) -> None:
        """The delivery gave the run back (ended, parked): the heartbeat stops renewing."""
        self._stop.set()

    def owned(self):
        """The run row, narrowed to this delivery's lease (for a conditional UPDATE)."""
        return ProcessRun.objects.filter(pk=self.run_id, lease_owner=self.token)

    # -- heartbeat ----------------------------------------------------------------------------

    def heartbeat_start(self) -> None:
        self._heartbeat = threading.Thread(
            target=self._beat, name=f"lease {self.run_id}", daemon=True
        )
        self._heartbeat.start()

    def heartbeat_stop(self) -> None:
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=self.seconds)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.seconds / 3):
                try:
                    self.hold()
                except LeaseLost:
                    if not self._stop.is_set():  # not merely our own letting go, racing this beat
                        logger.warning(
                            "run %s: lease lost; this delivery will write nothing more", self.run_id
                        )
                    return
                except Exception:  # the database blinked: try again next beat, the lease has slack
                    logger.exception("run %s: could not renew the lease", self.run_id)
        finally:
            connection.close()  # this thread's own connection
