"""The write boundary: the only door through which a record is created, changed or deleted.

Every call runs in one ``transaction.atomic()`` with its trail row: payload checks, write
entitlement and write RLS, guardrail rules, ``before_save``/``before_delete`` hooks, the write,
the outbound write state for a connected type, the record's watchers (``records.watches``: a
process triggered by the record entering a state) and the trail. A refusal changes nothing and leaves
a ``refused`` trail row (written after the failed write's savepoint is rolled back; inside a
``WriteUnit`` — a process step — after the caller's whole transaction is, with no savepoint paid
on success). A create's record and its ``allowed`` trail row are one INSERT statement on
PostgreSQL. Outbound sending happens after commit (``outbound_write_queued``), never inside the
request.

A process step's create that needs no more than its two rows (no ``before_save`` hook, no
outbound write, no watcher) goes further: ``record_create_ready`` checks it and builds its rows,
and ``rides_commit`` writes one or several such creates — the delivery's lease proof, each
record, its trail row and its step's ledger row — in one autocommitted statement: all of them or
none, in one round trip.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from django.db import IntegrityError, connections, models, router, transaction
from django.db.models import F
from django.utils import timezone

from guardrails.models import Decision, HeldDelete, RuleAction, WindowKind
from guardrails.rules import rule_decide
from guardrails.windows import window_admit
from kernel.errors import NotFound, Refusal, TurbobaseError
from kernel.ids import uuid_or_none
from kernel.rows import bound_cursor, row_insert, row_inserted, row_like
from records.catalog import RecordType, record_type_get
from records.codes import RefusalCode
from records.door import door_opened
from records.errors import (
    AtomicWriteRequired,
    DeleteCapExceeded,
    GuardrailDenied,
    NotSettleConflict,
    PayloadInvalid,
    ProtectedFieldRefused,
    RecordNotFound,
    RequiredFieldMissing,
    SyncVersionMoved,
)
from records.fields import fields_check
from records.hooks import HookContext, HookSlot, hooks_for, hooks_run
from records.models import (
    Record,
    RecordWriteState,
    SyncState,
    TrailAction,
    TrailOutcome,
    WriteOperation,
    WriteStatus,
    WriteTrail,
)
from records.outcomes import WriteOutcome
from records.policies import default_group, records_writable, write_entitlement_check
from records.signals import outbound_write_queued
from records.trail import Actor, trail_row, trail_write
from records.watches import record_watched, record_written


class DeleteWindowWait(TurbobaseError):
    """The delete window is full; the delete may be sent once it frees (``retry_at``)."""

    error = "delete_window_full"
    http_status = 429
    retryable = True

    def __init__(self, message: str, *, cap: str, retry_at) -> None:
        super().__init__(message, cap=cap, retryAt=retry_at.isoformat())
        self.cap = cap
        self.retry_at = retry_at


@dataclass(frozen=True)
class WriteResult:
    """What the boundary did, and the notice a held delete carries."""

    record: Record
    outcome: WriteOutcome
    code: str | None = None
    message: str = ""

    @property
    def is_new(self) -> bool:
        return self.outcome == WriteOutcome.CREATED


class WriteUnit:
    """A transaction the caller owns around boundary writes and its own rows (a process step: the
    write and its ledger row). Inside it a write opens no savepoint: a refusal rolls the whole unit
    back, and the refused trail row waits here until the caller, in a fresh transaction, records
    the failure (``refusals_trail``). A success costs no SAVEPOINT / RELEASE round trips."""

    def __init__(self) -> None:
        self.refusals: list[dict[str, Any]] = []

    @door_opened
    def refusals_trail(self) -> None:
        """Write the refused trail rows the rolled-back unit kept (call in the fresh transaction)."""
        for row in self.refusals:
            trail_write(**row)
        self.refusals.clear()


_unit: ContextVar[WriteUnit | None] = ContextVar("records_write_unit", default=None)


@contextmanager
def write_unit() -> Iterator[WriteUnit]:
    """``transaction.atomic()`` as a ``WriteUnit``: the boundary's writes inside share it whole."""
    unit = WriteUnit()
    token = _unit.set(unit)
    try:
        with transaction.atomic():
            yield unit
    finally:
        _unit.reset(token)


class _Refusing:
    """``_refusing``'s guard (one class, not one made per write)."""

    def __init__(self, actor: Actor, action: TrailAction, record_type: str, pg_row_id: Any) -> None:
        self.actor, self.action, self.record_type, self.pg_row_id = (
            actor,
            action,
            record_type,
            pg_row_id,
        )

    def __enter__(self) -> _Refusing:
        self.unit = _unit.get()
        self.atomic = transaction.atomic() if self.unit is None else None
        if self.atomic is not None:
            self.atomic.__enter__()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Literal[False]:
        if self.atomic is not None:
            self.atomic.__exit__(exc_type, exc, tb)
        if isinstance(exc, Refusal):
            row = dict(
                actor=self.actor,
                action=self.action,
                record_type=self.record_type,
                outcome=TrailOutcome.REFUSED,
                pg_row_id=self.pg_row_id,
                code=exc.code,
                field=exc.field,
                message=exc.message,
            )
            if self.unit is None:
                trail_write(**row)
            else:
                self.unit.refusals.append(row)
        return False


def _refusing(
    actor: Actor, action: TrailAction, record_type: str, pg_row_id: Any = None
) -> _Refusing:
    """Run the write in a savepoint; on refusal, trail it and re-raise. Inside a ``WriteUnit`` no
    savepoint: the refusal's trail row is kept on the unit, written once the unit rolled back."""
    return _Refusing(actor, action, record_type, pg_row_id)


def _check_payload(rt: RecordType, parent: Any, lines: Any, *, is_create: bool) -> None:
    if not isinstance(parent, dict):
        raise PayloadInvalid("parent must be an object of field values", field="parent")
    if lines is not None and not (
        isinstance(lines, list) and all(isinstance(x, dict) for x in lines)
    ):
        raise PayloadInvalid("lines must be a list of objects", field="lines")
    for name in parent:
        if rt.is_protected(name):
            raise ProtectedFieldRefused(
                f"{name} is a protected column and cannot be written", field=f"parent.{name}"
            )
    fields_check(rt, parent, lines)
    if not is_create:
        if not parent:
            raise PayloadInvalid("parent must name at least one field to change", field="parent")
        return
    for name in rt.required:
        if parent.get(name) in (None, ""):
            raise RequiredFieldMissing(f"{name} is required", field=f"parent.{name}")
    if rt.is_connected and rt.is_transaction and not lines and not parent.get("created_from_id"):
        raise AtomicWriteRequired(
            f"a {rt.name} create sends header and lines in one write: return a non-empty lines array, "
            "or set parent.created_from_id to transform another document",
            field="lines",
        )


def _rule_check(rt: RecordType, action: RuleAction) -> str:
    decision = rule_decide(record_type=rt.name, action=action, is_connected=rt.is_connected)
    if decision == Decision.DENY:
        raise GuardrailDenied(
            f"the guardrail rule {rt.name}.{action} denies this write", field=None
        )
    return decision


def record_snapshot(record: Record) -> dict[str, Any]:
    return {
        "pgRowId": str(record.pg_row_id),
        "externalId": record.external_id,
        "parent": dict(record.fields),
        "lines": list(record.lines),
        "syncVersion": record.sync_version,
    }


def _write_state_row(
    record: Record, operation: str, payload: dict, *, status: str = WriteStatus.PENDING
) -> RecordWriteState:
    """The outbound write of ``record`` to its source, not yet saved."""
    return RecordWriteState(
        record_id=record.pk,
        record_type=record.record_type,
        source_system=record.source_system,
        operation=operation,
        status=status,
        payload=payload,
    )


def _outbound_wake(record_type: str) -> None:
    """Wake the type's outbound drain once the write has committed (it sends every write due)."""
    transaction.on_commit(
        lambda: outbound_write_queued.send(sender=Record, record_type=record_type)
    )


def _queue_outbound(
    record: Record, operation: str, payload: dict, *, status: str = WriteStatus.PENDING
) -> RecordWriteState:
    state = _write_state_row(record, operation, payload, status=status)
    state.save(force_insert=True)
    if status == WriteStatus.PENDING:
        _outbound_wake(record.record_type)
    return state


def before_save_on_update(actor: Actor, rt: RecordType, record: Record, parent: dict) -> dict:
    """An update's ``before_save`` hooks (they may refuse), shown the record as it will be;
    answers that snapshot, whose ``parent`` the update stores."""
    merged = record_snapshot(record)
    merged["parent"].update(parent)
    hooks_run(
        HookContext(
            HookSlot.BEFORE_SAVE,
            rt.name,
            WriteOperation.UPDATE,
            merged,
            dict(parent),
            actor=actor.user.get_username(),
            process_run_id=actor.process_run_id or None,
        )
    )
    return merged


def _before_save_on_create(actor: Actor, rt: RecordType, record: Record, parent: dict) -> None:
    """A create's ``before_save`` hooks (they may refuse): one call for a single and a batch create."""
    hooks_run(
        HookContext(
            HookSlot.BEFORE_SAVE,
            rt.name,
            WriteOperation.CREATE,
            record_snapshot(record),
            dict(parent),
            actor=actor.user.get_username(),
            process_run_id=actor.process_run_id or None,
        )
    )


@door_opened
def record_create(
    *,
    actor: Actor,
    record_type: str,
    parent: Any,
    lines: Any = None,
    idempotency_key: str | None = None,
) -> WriteResult:
    """Create one record. A used idempotency key returns the first record and writes nothing."""
    rt = record_type_get(record_type)
    with _refusing(actor, TrailAction.CREATE, rt.name):
        _create_check(actor, rt, parent, lines)
        # A used key answers with its record before any hook runs; without hooks the idempotent
        # INSERT below finds that out itself, so the common create costs no look-up first.
        hooked = bool(hooks_for(HookSlot.BEFORE_SAVE, rt.name))
        if idempotency_key and hooked:
            existing = Record.objects.filter(idempotency_key=idempotency_key).first()
            if existing is not None:
                return _duplicate(actor, rt, existing)
        record = _record_new(actor, rt, parent, lines, idempotency_key)
        if hooked:
            _before_save_on_create(actor, rt, record, parent)
        trail = _trail_allowed(actor, rt, record)
        if not _insert_trailed(record, trail, keyed=bool(idempotency_key)):
            # A writer with the same key committed first (or was first in this transaction):
            # ON CONFLICT waited for it, and this create answers with that writer's record.
            existing = Record.objects.filter(idempotency_key=idempotency_key).first()
            if existing is None:
                raise IntegrityError(f"record with idempotency key {idempotency_key!r} vanished")
            return _duplicate(actor, rt, existing)
        if rt.is_connected:
            _queue_outbound(record, WriteOperation.CREATE, {"parent": parent, "lines": lines or []})
        record_written(actor, record, before=None)
        return WriteResult(record, WriteOutcome.CREATED)


def _create_check(actor: Actor, rt: RecordType, parent: Any, lines: Any) -> None:
    """What a create must pass before anything is written: the payload, the writer's
    entitlement (write RLS), the guardrail rules."""
    _check_payload(rt, parent, lines, is_create=True)
    write_entitlement_check(user=actor.user, record_type=rt)
    _rule_check(rt, RuleAction.CREATE)


def _record_new(
    actor: Actor,
    rt: RecordType,
    parent: dict,
    lines: list | None,
    idempotency_key: str | None,
    pg_row_id: uuid.UUID | None = None,
) -> Record:
    record = _record_like(
        _record_shared(actor, rt), parent=parent, lines=lines or [], key=idempotency_key or None
    )
    if pg_row_id is not None:
        record.pg_row_id = pg_row_id
    return record


def _record_shared(actor: Actor, rt: RecordType) -> Record:
    """What every record ``actor`` creates of type ``rt`` shares, built once (``Model.__init__``
    was a tenth of a step's time) and remembered on the user object — which lives for one request
    or one run delivery, as ``default_group`` is — under what it was built from."""
    memo = actor.user.__dict__.setdefault("_tb_record_shared", {})
    key = (rt.name, rt.source, rt.is_connected)
    shared = memo.get(key)
    if shared is None:
        shared = memo[key] = Record(
            record_type=rt.name,
            owner=actor.user,
            group=default_group(actor.user),
            source_system=rt.source or "",
            sync_state=SyncState.PENDING if rt.is_connected else SyncState.LOCAL,
        )
    return shared


def _trail_allowed(actor: Actor, rt: RecordType, record: Record) -> WriteTrail:
    return trail_row(
        actor=actor,
        action=TrailAction.CREATE,
        record_type=rt.name,
        outcome=TrailOutcome.ALLOWED,
        pg_row_id=record.pg_row_id,
    )


@dataclass
class Ride:
    """A create made ready to commit with other rows in one statement (``record_create_ready``):
    its record and ``allowed`` trail row, checked and built, nothing written yet — and the
    caller's ``row`` that commits with it (a process step's ledger row; ``rides_commit``)."""

    actor: Actor
    record: Record
    trail: WriteTrail
    row: models.Model | None = None
    state: RecordWriteState | None = None  # a connected type's outbound write


class RideKeyTaken(Exception):
    """A ride's idempotency key was already used: ``rides_commit`` wrote nothing. ``index``: the
    first ride (in order) whose key is taken — the rides before it may be committed again. Not a
    refusal (the caller makes that step again, alone), so not of the ``TurbobaseError`` family."""

    def __init__(self, index: int) -> None:
        super().__init__(f"the idempotency key of ride {index} is already used")
        self.index = index


@dataclass(frozen=True)
class RidesCommitted:
    """What ``rides_commit`` did: the gate's ``answer`` (None: it answered no row and nothing was
    written) and how many rides, from the first, were ``written``."""

    answer: tuple | None
    written: int


@door_opened
def record_create_ready(
    *,
    actor: Actor,
    record_type: str,
    parent: Any,
    lines: Any = None,
    idempotency_key: str,
    pg_row_id: uuid.UUID,
    unit: WriteUnit,
) -> Ride | None:
    """``record_create``'s checks and rows, nothing written: a ``Ride`` that ``rides_commit``
    writes, with others, in one statement. ``pg_row_id``: the record's id, chosen by the caller
    (a step tells the next step its outcome before the write). A refusal raises, its trail row
    kept on ``unit`` (as inside a ``WriteUnit``). None when the create cannot ride
    (``create_rides``): the caller makes it with ``record_create``."""
    if not create_rides(record_type):
        return None
    rt = record_type_get(record_type)
    record = _record_new(actor, rt, parent, lines, idempotency_key, pg_row_id)
    token = _unit.set(unit)
    try:
        with _refusing(actor, TrailAction.CREATE, rt.name):
            _create_check(actor, rt, parent, lines)
            if hooks_for(HookSlot.BEFORE_SAVE, rt.name):
                _before_save_on_create(actor, rt, record, parent)
    finally:
        _unit.reset(token)
    state = None
    if rt.is_connected:
        payload = {"parent": parent, "lines": lines or []}
        state = _write_state_row(record, WriteOperation.CREATE, payload)
    return Ride(actor, record, _trail_allowed(actor, rt, record), state=state)


@door_opened
def rides_commit(rides: list[Ride], gate: str, gate_params: list, *, cut: bool) -> RidesCommitted:
    """Write ``rides`` — each record, its trail row and its caller's row — behind ``gate`` in one
    autocommitted statement (outside any transaction, on PostgreSQL): all of them or none, in
    one round trip. ``gate``: an ``UPDATE … RETURNING`` that must answer a row for anything to
    be written (a delivery's lease); with ``cut``, when the first column it answers is true (the
    run's cancel request), only the first ride is written. Raises ``RideKeyTaken`` when a
    record's idempotency key was used already (nothing written)."""
    conn = connections[router.db_for_write(Record)]
    sql, params = _rides_statement(conn, rides, gate, cut=cut)
    try:
        with bound_cursor(conn) as cursor:
            cursor.execute(sql, gate_params + params)
            answer = cursor.fetchone()
    except IntegrityError as exc:
        if getattr(getattr(exc.__cause__, "diag", None), "constraint_name", "") != _KEY_UNIQUE:
            raise
        raise RideKeyTaken(_first_taken(rides)) from exc
    if answer is None:
        return RidesCommitted(None, 0)
    db = conn.alias
    trails, rows = answer[-2], answer[-1]
    for ride, trail_id, row_id in zip(rides, trails, rows, strict=False):
        row_inserted(ride.record, db)
        row_inserted(ride.trail, db, trail_id)
        row_inserted(_ride_row(ride), db, row_id)
        record_written(ride.actor, ride.record, before=None)
    connected = {r.record.record_type for r in rides[: len(rows)] if r.state is not None}
    for record_type in sorted(connected):  # the statement committed: the drains may send
        _outbound_wake(record_type)
    return RidesCommitted(tuple(answer[:-2]), len(rows))


# The unique constraint on Record.idempotency_key (records/0004): a ride's key already used.
_KEY_UNIQUE = "record_idempotency_key"


def _ride_row(ride: Ride) -> models.Model:
    if ride.row is None:
        raise AssertionError("a ride is committed with its caller's row")
    return ride.row


def _rides_statement(conn: Any, rides: list[Ride], gate: str, *, cut: bool) -> tuple[str, list]:
    """The gate, then the records, trail rows, callers' rows and outbound writes of ``rides``,
    each table one INSERT … SELECT from the gate (no row from the gate, no insert). With ``cut``,
    the rows of the rides after the first come from a second VALUES list read only when the gate's
    first column is false. The answer: the gate's row and the ids of the trail rows and callers'
    rows, in order."""
    tables = [
        [(n, row_insert(conn, r.record)) for n, r in enumerate(rides)],
        [(n, row_insert(conn, r.trail)) for n, r in enumerate(rides)],
        [(n, row_insert(conn, _ride_row(r))) for n, r in enumerate(rides)],
        [(n, row_insert(conn, r.state)) for n, r in enumerate(rides) if r.state is not None],
    ]
    params: list = []
    sources = []
    for inserts in tables:
        if not inserts:
            continue
        first = [insert for n, insert in inserts if n == 0 or not cut]
        rest = [insert for n, insert in inserts if n != 0 and cut]
        parts = []
        if first:
            listed = ", ".join(f"({insert.values})" for insert in first)
            parts.append(f"SELECT v.* FROM gate, (VALUES {listed}) AS v")
        if rest:
            listed = ", ".join(f"({insert.values})" for insert in rest)
            parts.append(
                f"SELECT v.* FROM gate AS g (stop), (VALUES {listed}) AS v WHERE NOT g.stop"
            )
        sources.append(f"{inserts[0][1].head} {' UNION ALL '.join(parts)}")
        for insert in first + rest:
            params += insert.params
    created, trailed, rode, *stated = sources
    pk = conn.ops.quote_name(str(_ride_row(rides[0])._meta.pk.column))
    outbound = f", stated AS ({stated[0]})" if stated else ""
    sql = (
        f"WITH gate AS ({gate}), created AS ({created}), "
        f"trailed AS ({trailed} RETURNING id), rode AS ({rode} RETURNING {pk}){outbound} "
        "SELECT gate.*, ARRAY(SELECT id FROM trailed ORDER BY id),"
        f" ARRAY(SELECT {pk} FROM rode ORDER BY {pk}) FROM gate"
    )
    return sql, params


def _first_taken(rides: list[Ride]) -> int:
    """The first of ``rides`` whose key a committed record holds (0 if none does now: the writer
    that held it rolled back, and the first ride is made again alone)."""
    keys = [ride.record.idempotency_key for ride in rides]
    taken = set(
        Record.reads.filter(idempotency_key__in=keys).values_list("idempotency_key", flat=True)
    )
    return next((index for index, key in enumerate(keys) if key in taken), 0)


def create_rides(record_type: str) -> bool:
    """Whether a create of ``record_type`` made now can ride (``record_create_ready``,
    ``rides_commit``): on PostgreSQL, outside any transaction, a type no watcher watches (a
    watcher's rows join the write's transaction; a ride has none). Its ``before_save`` hooks run
    when it is made ready, and a connected type's outbound write rides with it."""
    conn = connections[router.db_for_write(Record)]
    if conn.vendor != "postgresql" or conn.in_atomic_block:
        return False
    try:
        rt = record_type_get(record_type)
    except NotFound:  # the create itself refuses it, by name
        return False
    return not record_watched(rt.name)


def _insert_trailed(record: Record, trail: WriteTrail, *, keyed: bool) -> bool:
    """INSERT the record and its ``allowed`` trail row. ``keyed``: unless its idempotency key is
    taken — ``INSERT … ON CONFLICT (idempotency_key) DO NOTHING`` (PostgreSQL and SQLite alike),
    so no savepoint is needed to survive a concurrent writer's key: a conflict is not an error, it
    inserts nothing (False). On PostgreSQL the trail row rides in the same statement, inserted
    from the record INSERT's RETURNING (so only when the record was): one round trip for both."""
    db = router.db_for_write(Record, instance=record)
    conn = connections[db]
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
            if answer is not None:
                row_inserted(trail, db, answer[0])
        else:
            cursor.execute(sql, new.params)
            answer = (None,) if cursor.rowcount == 1 else None
            if answer is not None:
                trail.save(force_insert=True)
    if answer is None:
        return False
    row_inserted(record, db)
    return True


def _duplicate(actor: Actor, rt: RecordType, existing: Record) -> WriteResult:
    if existing.record_type != rt.name:
        raise PayloadInvalid(
            f"idempotency key already used for a {existing.record_type} record",
            field="idempotencyKey",
        )
    trail_write(
        actor=actor,
        action=TrailAction.CREATE,
        record_type=rt.name,
        outcome=TrailOutcome.DUPLICATE,
        pg_row_id=existing.pg_row_id,
        message="idempotency key already used; nothing written",
    )
    return WriteResult(existing, WriteOutcome.DUPLICATE)


def _address(
    actor: Actor,
    rt: RecordType,
    *,
    pg_row_id: Any,
    external_id: Any,
    source_system: str | None = None,
) -> Record:
    """Lock and return the one writable record the address names, else 404 (never a create)."""
    if (pg_row_id in (None, "")) == (external_id in (None, "")):
        raise PayloadInvalid(
            "name the record by exactly one of pgRowId or externalId", field="pgRowId"
        )
    rows = records_writable(user=actor.user, record_type=rt)
    if source_system:
        rows = rows.filter(source_system=source_system)
    if pg_row_id not in (None, ""):
        parsed = uuid_or_none(str(pg_row_id))
        if parsed is None:  # not a UUID: no record can have it
            raise RecordNotFound(f"no {rt.name} record has pgRowId {pg_row_id!r}", field="pgRowId")
        field, found = "pgRowId", rows.select_for_update().filter(pg_row_id=parsed).first()
    else:
        field, found = (
            "externalId",
            rows.select_for_update().filter(external_id=str(external_id)).first(),
        )
    if found is None:
        value = pg_row_id if field == "pgRowId" else external_id
        raise RecordNotFound(f"no {rt.name} record you can see has {field} {value!r}", field=field)
    return found


@door_opened
def record_update(
    *,
    actor: Actor,
    record_type: str,
    parent: Any,
    pg_row_id: Any = None,
    external_id: Any = None,
    expected_sync_version: int | None = None,
) -> WriteResult:
    """Change the named fields of one record; only those fields are written."""
    rt = record_type_get(record_type)
    with _refusing(actor, TrailAction.UPDATE, rt.name, pg_row_id):
        _check_payload(rt, parent, None, is_create=False)
        write_entitlement_check(user=actor.user, record_type=rt)
        _rule_check(rt, RuleAction.UPDATE)
        record = _address(actor, rt, pg_row_id=pg_row_id, external_id=external_id)
        if expected_sync_version is not None and int(expected_sync_version) != record.sync_version:
            raise SyncVersionMoved(
                f"expected sync version {expected_sync_version}, the record is at {record.sync_version}",
                field="expectedSyncVersion",
            )
        merged = before_save_on_update(actor, rt, record, parent)
        before, record.fields = record.fields, merged["parent"]
        now = timezone.now()
        Record.objects.filter(pk=record.pk).update(
            fields=record.fields, sync_version=F("sync_version") + 1, updated_at=now
        )
        # The row is locked (``_address``) and nothing else moves on an update: what it holds now
        # is known, so it is not read back.
        record.sync_version, record.updated_at = record.sync_version + 1, now
        if rt.is_connected:
            _queue_outbound(record, WriteOperation.UPDATE, {"parent": parent})
        record_written(actor, record, before=before)
        trail_write(
            actor=actor,
            action=TrailAction.UPDATE,
            record_type=rt.name,
            outcome=TrailOutcome.ALLOWED,
            pg_row_id=record.pg_row_id,
        )
        return WriteResult(record, WriteOutcome.UPDATED)


@door_opened
def record_delete(
    *,
    actor: Actor,
    record_type: str,
    pg_row_id: Any = None,
    external_id: Any = None,
    source_system: str | None = None,
    rollback: bool = False,
    on_cap: str = "refuse",
) -> WriteResult:
    """Delete one record.

    App-owned: removed now. Connected: hidden at once; held for an operator (the stock rule),
    or queued for the source. ``rollback=True`` charges the rollback window (it waits, never
    refuses, and is never held); otherwise the ordinary delete cap refuses (``on_cap='refuse'``)
    or asks the caller to wait (``on_cap='wait'``, raises ``DeleteWindowWait``).
    """
    rt = record_type_get(record_type)
    with _refusing(actor, TrailAction.DELETE, rt.name, pg_row_id):
        write_entitlement_check(user=actor.user, record_type=rt)
        decision = _rule_check(rt, RuleAction.DELETE)
        record = _address(
            actor, rt, pg_row_id=pg_row_id, external_id=external_id, source_system=source_system
        )
        hooks_run(
            HookContext(
                HookSlot.BEFORE_DELETE,
                rt.name,
                WriteOperation.DELETE,
                record_snapshot(record),
                actor=actor.user.get_username(),
                process_run_id=actor.process_run_id or None,
            )
        )
        if not rt.is_connected:
            snapshot = record_snapshot(record)
            pk = record.pk
            record.delete()
            record.pk = (
                pk  # Django clears the pk on delete; the answer and the trail still name the row
            )
            trail_write(
                actor=actor,
                action=TrailAction.DELETE,
                record_type=rt.name,
                outcome=TrailOutcome.ALLOWED,
                pg_row_id=record.pk,
            )
            after_delete_schedule(actor, rt.name, snapshot)
            return WriteResult(record, WriteOutcome.DELETED)
        _charge_delete(rt, record, rollback=rollback, on_cap=on_cap)
        prior = record.sync_state
        if decision == Decision.HOLD and not rollback:
            return _hold(actor, rt, record, prior)
        Record.objects.filter(pk=record.pk).update(
            sync_state=SyncState.DELETING, updated_at=timezone.now()
        )
        record.sync_state = SyncState.DELETING
        _queue_outbound(record, WriteOperation.DELETE, {"prior_state": prior})
        trail_write(
            actor=actor,
            action=TrailAction.DELETE,
            record_type=rt.name,
            outcome=TrailOutcome.ALLOWED,
            pg_row_id=record.pg_row_id,
            code=RefusalCode.ALLOW_WITH_AUDIT if decision == Decision.ALLOW_WITH_AUDIT else "",
        )
        after_delete_schedule(actor, rt.name, record_snapshot(record))
        return WriteResult(record, WriteOutcome.QUEUED)


def _charge_delete(rt: RecordType, record: Record, *, rollback: bool, on_cap: str) -> None:
    kind = WindowKind.ROLLBACK if rollback else WindowKind.DELETE
    admission = window_admit(kind=kind, source_system=record.source_system)
    if admission.admitted:
        return
    # A refused admission always names its cap and when the window frees (guardrails.windows).
    assert admission.cap is not None and admission.retry_at is not None
    message = (
        f"{admission.cap} ({admission.limit}) reached for {record.source_system}; "
        f"the window frees at {admission.retry_at.isoformat()}"
    )
    if rollback or on_cap == "wait":
        raise DeleteWindowWait(message, cap=admission.cap, retry_at=admission.retry_at)
    raise DeleteCapExceeded(
        f"delete refused, the record stays: {message}",
        field=admission.cap,
        retry_at=admission.retry_at,
    )


def _hold(actor: Actor, rt: RecordType, record: Record, prior: str) -> WriteResult:
    Record.objects.filter(pk=record.pk).update(
        sync_state=SyncState.DELETE_HELD, updated_at=timezone.now()
    )
    record.sync_state = SyncState.DELETE_HELD
    _queue_outbound(record, WriteOperation.DELETE, {"prior_state": prior}, status=WriteStatus.HELD)
    HeldDelete.objects.create(
        record_type=rt.name,
        pg_row_id=record.pg_row_id,
        external_id=record.external_id,
        source_system=record.source_system,
        requested_by=actor.user if actor.user.pk else None,
        process_run_id=actor.process_run_id,
        process_step=actor.process_step,
    )
    message = "the delete is held for an operator's approval; the record is hidden until then"
    trail_write(
        actor=actor,
        action=TrailAction.DELETE,
        record_type=rt.name,
        outcome=TrailOutcome.HELD,
        pg_row_id=record.pg_row_id,
        code=RefusalCode.SOURCE_AWAITING_CONFIRMATION,
        message=message,
    )
    return WriteResult(
        record, WriteOutcome.HELD, code=RefusalCode.SOURCE_AWAITING_CONFIRMATION, message=message
    )


def after_delete_schedule(actor: Actor, record_type: str, snapshot: dict) -> None:
    """Run the after_delete hooks once the delete has committed (they cannot refuse it)."""
    context = HookContext(
        HookSlot.AFTER_DELETE,
        record_type,
        WriteOperation.DELETE,
        snapshot,
        actor=actor.user.get_username(),
        process_run_id=actor.process_run_id or None,
    )
    transaction.on_commit(lambda: _run_after_delete(context))


def _run_after_delete(context: HookContext) -> None:
    import logging

    try:
        hooks_run(context)
    except Exception:  # the record is already gone; an after_delete hook cannot refuse it
        logging.getLogger(__name__).exception(
            "after_delete hook failed for %s", context.record_type
        )


@door_opened
def record_settle(*, actor: Actor, record_type: str, pg_row_id: Any) -> WriteResult:
    """Link a row whose upstream create landed but whose link back failed (write_settle_conflict).

    The id is read from the row's write state, never from the caller. An inbound copy of the same
    upstream record that arrived meanwhile is discarded.
    """
    rt = record_type_get(record_type)
    with _refusing(actor, TrailAction.SETTLE, rt.name, pg_row_id):
        write_entitlement_check(user=actor.user, record_type=rt)
        record = _address(actor, rt, pg_row_id=pg_row_id, external_id=None)
        state = (
            RecordWriteState.objects.select_for_update()
            .filter(record=record, status=WriteStatus.SETTLE_CONFLICT)
            .order_by("-id")
            .first()
        )
        if record.sync_state != SyncState.SETTLE_CONFLICT or state is None:
            raise NotSettleConflict(
                f"{rt.name} {record.pg_row_id} is {record.sync_state}, not waiting to be settled",
                field="pgRowId",
            )
        Record.objects.filter(
            record_type=rt.name, source_system=record.source_system, external_id=state.external_id
        ).exclude(pk=record.pk).delete()
        now = timezone.now()
        Record.objects.filter(pk=record.pk).update(
            external_id=state.external_id,
            sync_state=SyncState.SYNCED,
            synced_at=now,
            updated_at=now,
        )
        state.status = WriteStatus.SETTLED
        state.save(update_fields=["status", "updated_at"])
        record.refresh_from_db()
        trail_write(
            actor=actor,
            action=TrailAction.SETTLE,
            record_type=rt.name,
            outcome=TrailOutcome.SETTLED,
            pg_row_id=record.pg_row_id,
        )
        return WriteResult(record, WriteOutcome.SETTLED)


def _record_like(shared: Record, *, parent: Any, lines: Any, key: str | None) -> Record:
    """A new, unsaved record with ``shared``'s columns and related objects, and its own id."""
    return row_like(shared, pg_row_id=uuid.uuid4(), fields=parent, lines=lines, idempotency_key=key)
