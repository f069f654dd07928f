"""The raw SQL writes: the one module where rows of records, trail rows, outbound write states and
a caller's rows (a process step's ledger rows) are written by hand-built statements, not by the
ORM — the few hot writes that must say more in one statement than an ORM INSERT can.

Each statement is built here from typed parts: model rows (``kernel.rows.row_insert`` prepares
their values as ``Model.save()`` would) and a ``LeaseProof`` (``records.step_writes``: the
conditional UPDATE by which a caller proves it still holds its lease). No caller hands SQL in;
every rule about *what* to write (checks, hooks, guardrails, trail outcomes) lives in the
boundary's modules, which call these.

- ``proof_run``: the lease proof alone (its answer goes to the gate).
- ``proof_insert``: the proof and one row (a ledger row): on PostgreSQL one statement.
- ``pair_insert``: a created record and its ``allowed`` trail row: on PostgreSQL one statement.
- ``group_insert``: a group of creates — the proof, every record, trail row, caller's row and
  outbound write state — in one autocommitted statement, all of them or none.

Rows written here are marked by the primary key their INSERT answered; their ``_state`` is left
as built (nothing saves them again as new rows).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from django.db import DataError, connections, models, router
from django.db.backends.base.base import BaseDatabaseWrapper

from kernel.rows import RowInsert, bound_cursor, row_insert
from records.models import Record, RecordWriteState
from records.sql_columns import column_name
from records.sql_deletes import delete_sources

if TYPE_CHECKING:
    from records.step_writes import LeaseProof, StepGate


@lru_cache(maxsize=64)
def _proof_text(
    alias: str, model: type[models.Model], names: tuple[str, ...], owner: str, answer: str
) -> tuple[str, tuple[models.Field, ...]]:
    """The text of a proof's UPDATE on database ``alias`` and the fields preparing its values:
    it depends on nothing else, and building it (field look-ups, quoting) cost more than the
    rest of a step's proof."""
    conn = connections[alias]
    quote = conn.ops.quote_name
    meta = model._meta
    assert meta.pk is not None
    fields = tuple(meta.get_field(name) for name in names)
    assignments = ", ".join(f"{quote(column_name(model, name))} = %s" for name in names)
    sql = (
        f"UPDATE {quote(meta.db_table)} SET {assignments} "
        f"WHERE {quote(str(meta.pk.column))} = %s AND {quote(column_name(model, owner))} = %s "
        f"RETURNING {quote(column_name(model, answer))}"
    )
    return sql, fields  # type: ignore[return-value]


def _proof_sql(conn: BaseDatabaseWrapper, proof: LeaseProof) -> tuple[str, list]:
    """``proof`` as its UPDATE … RETURNING and the statement's params."""
    sql, fields = _proof_text(
        conn.alias, proof.model, tuple(proof.sets), proof.owner_field, proof.answer_field
    )
    params = [
        field.get_db_prep_save(value, conn)
        for field, value in zip(fields, proof.sets.values(), strict=True)
    ]
    pk = proof.model._meta.pk
    assert pk is not None
    params.append(pk.get_db_prep_value(proof.pk, conn))
    params.append(proof.owner)
    return sql, params


def proof_run(gate: StepGate) -> None:
    """Run the gate's proof alone; its answer (None: no row, the lease was lost) goes back to
    the gate (``StepGate.proved``)."""
    proof = gate.proof()
    conn = connections[router.db_for_write(proof.model)]
    sql, params = _proof_sql(conn, proof)
    with conn.cursor() as cursor:
        cursor.execute(sql, params)
        answer = cursor.fetchone()
    gate.proved(None if answer is None else answer[0])


def proof_insert(gate: StepGate, row: models.Model) -> None:
    """The gate's proof and an INSERT of ``row``, in the caller's transaction — on PostgreSQL in
    one statement: the INSERT takes its values from the proof's row (no row, no insert) and the
    statement answers the proof's answer and the new row's id."""
    db = router.db_for_write(type(row), instance=row)
    conn = connections[db]
    if conn.vendor != "postgresql":  # SQLite has no data-modifying CTE: two statements
        proof_run(gate)
        row.save(force_insert=True, using=db)
        return
    gate_sql, params = _proof_sql(conn, gate.proof())
    written = row_insert(conn, row)
    pk = conn.ops.quote_name(str(_pk(row).column))
    sql = (
        f"WITH held AS ({gate_sql}), "
        f"written AS ({written.head} SELECT {written.values} FROM held RETURNING {pk}) "
        f"SELECT held.*, written.{pk} FROM held, written"
    )
    with bound_cursor(conn) as cursor:
        cursor.execute(sql, params + written.params)
        answer = cursor.fetchone()
    gate.proved(None if answer is None else answer[0])
    row.pk = answer[-1]


def _pk(row: models.Model) -> models.Field:
    pk = row._meta.pk
    assert pk is not None
    return pk


def pair_insert(record: Record, trail: models.Model, *, keyed: bool) -> bool:
    """INSERT the record and its trail row. ``keyed``: unless its idempotency key is taken —
    ``INSERT … ON CONFLICT (idempotency_key) DO NOTHING`` (PostgreSQL and SQLite alike), so no
    savepoint is needed to survive a concurrent writer's key: a conflict is not an error, it
    inserts nothing (False). On PostgreSQL the trail row rides in the same statement, inserted
    from the record INSERT's RETURNING (so only when the record was): one round trip for both."""
    conn = connections[router.db_for_write(Record, instance=record)]
    new, trailed = row_insert(conn, record), row_insert(conn, trail)
    sql = f"{new.head} VALUES ({new.values})"
    if keyed:
        sql += " ON CONFLICT (idempotency_key) DO NOTHING"
    with bound_cursor(conn) as cursor:
        if conn.vendor == "postgresql":
            cursor.execute(
                f"WITH created AS ({sql} RETURNING 1) "
                f"{trailed.head} SELECT {trailed.values} FROM created RETURNING id",
                new.params + trailed.params,
            )
            answer = cursor.fetchone()
            if answer is None:
                return False
            trail.pk = answer[0]
            return True
        cursor.execute(sql, new.params)
        if cursor.rowcount != 1:
            return False
    trail.save(force_insert=True)
    return True


@dataclass(frozen=True)
class GroupRows:
    """One write of a group, as rows: its record (created; or, with ``version``, changed — its
    ``fields``, ``sync_version`` and ``updated_at`` as they will be, written only where the row
    is still at ``version``), trail row, caller's row, outbound write."""

    record: Record
    trail: models.Model
    row: models.Model
    state: models.Model | None = None
    version: int | None = None
    delete: bool = False  # with ``version``: the record is removed (app-owned), not changed
    hidden_from: str | None = None  # a delete that hides a connected record in this sync state
    charge: models.Model | None = None  # its delete window's charge
    state_ref: str = ""  # the field of ``row`` that takes ``state``'s id (a ledger row's)
    final: Record | None = None  # a create: its record as the group's updates of it leave it
    folded: bool = False  # an update of a record the group creates: no UPDATE (``final``)


class GroupMoved(Exception):
    """An update of the group found its record at another version than it was read at: the
    statement failed whole (nothing written)."""


# The SQLSTATE of division_by_zero: how the group's statement fails itself when an update of
# it changed fewer rows than it should (a data-modifying CTE cannot be undone any other way).
_MOVED = "22012"


@dataclass(frozen=True)
class GroupInserted:
    """What ``group_insert`` answered: the proof's answer (``proved`` False: no row, nothing
    written) and how many creates, from the first, were written."""

    proved: bool
    answer: Any
    written: int


def group_insert(gate: StepGate, writes: Sequence[GroupRows], *, cut: bool) -> GroupInserted:
    """Write ``writes`` behind the gate's proof in one autocommitted statement (on PostgreSQL,
    outside any transaction): all of them or none. With ``cut``, when the proof answers true (a
    cancel pending), only the first is written. An ``IntegrityError`` (a key taken) propagates
    and ``GroupMoved`` is raised when an update's record moved: nothing was written either way.
    The rows written are given the ids their INSERTs answered."""
    conn = connections[router.db_for_write(Record)]
    gate_sql, gate_params = _proof_sql(conn, gate.proof())
    sql, params = _group_statement(conn, writes, gate_sql, cut=cut)
    try:
        with bound_cursor(conn) as cursor:
            cursor.execute(sql, gate_params + params)
            answer = cursor.fetchone()
    except DataError as exc:
        if getattr(exc.__cause__, "sqlstate", None) != _MOVED:
            raise
        raise GroupMoved() from exc
    if answer is None:
        return GroupInserted(False, None, 0)
    trails, rows, states = answer[-4], answer[-3], iter(answer[-2] or ())
    for write, trail_id, row_id in zip(writes, trails, rows, strict=False):
        write.trail.pk, write.row.pk = trail_id, row_id
        if write.state is not None:
            write.state.pk = next(states)
            if write.state_ref:
                setattr(write.row, write.state_ref, write.state.pk)
    return GroupInserted(True, answer[0], len(rows))


def _group_statement(
    conn: Any, writes: Sequence[GroupRows], gate: str, *, cut: bool
) -> tuple[str, list]:
    """The gate, then the records created and changed, trail rows, callers' rows and outbound
    writes of ``writes``, each table one INSERT … SELECT (or UPDATE … FROM) from the gate (no
    row from the gate, nothing written). With ``cut``, the rows of the writes after the first
    are read only when the gate's answer is false. The answer: the gate's row, the ids of the
    trail rows, callers' rows and outbound states, in order, and a check that fails the
    statement when an update or delete changed fewer rows than it should (``GroupMoved``)."""
    created, stopped = _created(conn, writes, cut=cut)
    tables = [
        ("trailed", [(n, row_insert(conn, w.trail)) for n, w in enumerate(writes)]),
        # before the callers' rows: a row may take its write's state's id (``_row_linked``)
        ("stated", [(n, row_insert(conn, w.state)) for n, w in enumerate(writes) if w.state]),
        ("rode", [(n, _row_linked(conn, w)) for n, w in enumerate(writes)]),
        ("charged", [(n, row_insert(conn, w.charge)) for n, w in enumerate(writes) if w.charge]),
    ]
    ctes, params = [f"gate AS ({gate})"], []
    if created:
        source, values = _table_source(created, cut=cut, stopped=stopped)
        ctes.append(f"created AS ({source})")
        params += values
    changed = [
        (n, w) for n, w in enumerate(writes) if w.version is not None and not (w.delete or w.folded)
    ]
    if changed:
        source, values = _update_source(conn, changed, cut=cut)
        ctes.append(f"changed AS ({source})")
        params += values
    removed = [(n, w) for n, w in enumerate(writes) if w.delete]
    sources, values, counts = delete_sources(conn, removed, cut=cut)
    ctes += sources
    params += values
    pk = conn.ops.quote_name(str(_pk(writes[0].row).column))
    state_of = conn.ops.quote_name(column_name(RecordWriteState, "record"))  # for ``_row_linked``
    returned = {
        "trailed": " RETURNING id",
        "rode": f" RETURNING {pk}",
        "stated": f" RETURNING id, {state_of}",
    }
    for name, inserts in tables:
        if inserts:
            source, values = _table_source(inserts, cut=cut)
            ctes.append(f"{name} AS ({source}{returned.get(name, '')})")
            params += values
    check, values = _moved_check(
        (["changed"] if changed else []) + counts,
        len(changed) + len(removed),
        1 if writes[0].version is not None else 0,
        cut=cut,
    )
    params += values
    stated = "ARRAY(SELECT id FROM stated ORDER BY id)" if tables[1][1] else "NULL"
    sql = (
        f"WITH {', '.join(ctes)} "
        "SELECT g.*, ARRAY(SELECT id FROM trailed ORDER BY id),"
        f" ARRAY(SELECT {pk} FROM rode ORDER BY {pk}), {stated}, {check} FROM gate AS g (stop)"
    )
    return sql, params


def _moved_check(counted: list[str], expected: int, at_stop: int, *, cut: bool) -> tuple[str, list]:
    """The answer's check: 1, or a division by zero when the CTEs ``counted`` changed fewer
    rows than ``expected`` (``at_stop`` when the gate stopped a ``cut`` group)."""
    if not counted:
        return "1", []
    total = " + ".join(f"(SELECT count(*) FROM {name})" for name in counted)
    check = (
        f"1 / CASE WHEN {total} = CASE WHEN g.stop THEN %s::bigint ELSE %s::bigint END"
        " THEN 1 ELSE 0 END"
    )
    return check, [at_stop if cut else expected, expected]


def _update_source(
    conn: Any, changed: list[tuple[int, GroupRows]], *, cut: bool
) -> tuple[str, list]:
    """The UPDATE of the group's changed records: each where it is still at the version read
    (and, with ``cut``, the writes after the first only while the gate's answer is false)."""
    quote = conn.ops.quote_name
    meta = Record._meta
    names = ("pg_row_id", "sync_version", "fields", "updated_at")
    fields = [meta.get_field(name) for name in names]
    columns = [quote(column_name(Record, name)) for name in names]
    casts = [str(field.db_type(conn)) for field in fields]
    listed, params = [], []
    for n, write in changed:
        listed.append("(" + ", ".join(f"%s::{cast}" for cast in casts) + ", %s::boolean)")
        values = (write.record.pk, write.version, write.record.fields, write.record.updated_at)
        params += [f.get_db_prep_save(v, conn) for f, v in zip(fields, values, strict=True)]  # type: ignore[union-attr]
        params.append(n == 0 or not cut)
    pk, version, data, stamp = columns
    sql = (
        f"UPDATE {quote(meta.db_table)} AS r SET {data} = v.f, {version} = r.{version} + 1,"
        f" {stamp} = v.t FROM gate AS g (stop), (VALUES {', '.join(listed)}) AS v (k, n, f, t, first)"
        f" WHERE r.{pk} = v.k AND r.{version} = v.n AND (v.first OR NOT g.stop)"
        f" RETURNING r.{pk}"
    )
    return sql, params


# A placeholder of ``row_insert``'s values: each starts one (its cast never holds one).
_VALUE = re.compile(r", (?=%s)")


def _row_linked(conn: Any, write: GroupRows) -> RowInsert:
    """The caller's row's INSERT; with ``state_ref``, that column's value is the id the write's
    outbound state is given in the same statement (a subquery of ``stated``, by its record)."""
    insert = row_insert(conn, write.row)
    if not write.state_ref:
        return insert
    meta = type(write.row)._meta
    names = [f.name for f in meta.concrete_fields if f is not meta.auto_field]  # row_insert's
    at = names.index(write.state_ref)
    values = _VALUE.split(insert.values)
    assert len(values) == len(names) == len(insert.params)
    record = conn.ops.quote_name(column_name(RecordWriteState, "record"))
    values[at] = f"(SELECT id FROM stated WHERE {record} = %s::uuid)"
    params = [*insert.params[:at], write.record.pk, *insert.params[at + 1 :]]
    return RowInsert(head=insert.head, values=", ".join(values), params=params)


def _created(
    conn: Any, writes: Sequence[GroupRows], *, cut: bool
) -> tuple[list[tuple[int, RowInsert]], list[RowInsert]]:
    """The INSERTs of the group's created records, each as the group's updates of it leave it
    (``final``); and, for a ``cut`` group's first write so changed, its record as created, which
    is written instead when the gate stops the group after that write."""
    created, stopped = [], []
    for n, w in enumerate(writes):
        if w.version is not None:
            continue
        if w.final is None:
            created.append((n, row_insert(conn, w.record)))
            continue
        if n == 0 and cut:
            stopped.append(row_insert(conn, w.record))
            n = -1  # the final record only where the gate did not stop the group
        created.append((n, row_insert(conn, w.final)))
    return created, stopped


def _table_source(
    inserts: list[tuple[int, RowInsert]], *, cut: bool, stopped: Sequence[RowInsert] = ()
) -> tuple[str, list]:
    """One table's INSERT … SELECT from the gate, and its params (see ``_group_statement``);
    ``stopped``: rows written only when the gate stopped a ``cut`` group."""
    first = [insert for n, insert in inserts if n == 0 or not cut]
    rest = [insert for n, insert in inserts if n != 0 and cut]
    parts = []
    if stopped:
        listed = ", ".join(f"({insert.values})" for insert in stopped)
        parts.append(f"SELECT v.* FROM gate AS g (stop), (VALUES {listed}) AS v WHERE g.stop")
    if first:
        listed = ", ".join(f"({insert.values})" for insert in first)
        parts.append(f"SELECT v.* FROM gate, (VALUES {listed}) AS v")
    if rest:
        listed = ", ".join(f"({insert.values})" for insert in rest)
        parts.append(f"SELECT v.* FROM gate AS g (stop), (VALUES {listed}) AS v WHERE NOT g.stop")
    params: list = []
    for insert in [*stopped, *first, *rest]:
        params += insert.params
    return f"{inserts[0][1].head} {' UNION ALL '.join(parts)}", params
