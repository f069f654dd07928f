"""The ``sandbox`` source: a NetSuite-like system that lives in this database.

It behaves like the real thing where the seed says what the real thing does — ids minted per
document type (``PO-1041``, ``PO-1042``…), header and lines in one write (``ATOMIC_WRITE_REQUIRED``),
mandatory fields (``MANDATORY_FIELD_MISSING``), no deleting a document another one was created
from (``RECORD_REFERENCED``), one document per create idempotency key (a re-sent create is answered
with the document the first send made) — and misbehaves on request, per record type, through
``sources.scripting`` (latency, refusals, transient failures, never answering, a lost link back).

Every send is logged in ``SandboxSend`` with the number of writes of its type in flight, so the
ordering guarantee can be asserted from outside the worker processes.

A run of writes (``send_batch``) first waits out each write's pacing slot and scripted latency
(holding no lock), then is answered in one transaction, as the one system it is: its documents,
its send log and the worker's verdicts (``answered``, called inside it) commit together or not at
all, so a worker killed mid-run leaves nothing of the run behind and the next one sends it whole
— never a write twice. The gauge of writes in flight is raised in a transaction of its own first,
so a second sender of the type would see it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from records.codes import RefusalCode
from records.models import HIDDEN_STATES, Record, WriteOperation
from records.outcomes import VerdictKind
from sources.adapters.base import (
    Answered,
    BeforeEach,
    OutboundWrite,
    Outcome,
    SourceAdapter,
    confirmed,
    refused,
    settle_conflict,
    transient,
)
from sources.adapters.sandbox_run import SandboxRun, sandbox_mint
from sources.codes import SourceCode
from sources.models import (
    SandboxDocument,
    SandboxInFlight,
    SandboxScript,
    SandboxSend,
)
from sources.scripting import sandbox_script_for


class SandboxAdapter(SourceAdapter):
    """The built-in simulated source. Config: none needed (``{"adapter": "sandbox"}``)."""

    name = "sandbox"
    _run: SandboxRun | None = None  # set while ``send_batch`` answers a run

    def send_batch(
        self, writes: Sequence[OutboundWrite], *, before_each: BeforeEach, answered: Answered
    ) -> int:
        """Wait out the run's pacing slots and scripted latencies, then answer it in one short
        transaction with ``answered`` inside it (no lock is held while the run waits: on SQLite
        a transaction's write lock would hold up every other type's drain)."""
        if not writes:
            return 0
        name = writes[0].record_type.name
        in_flight = self._in_flight_add(name, 1)
        self._run = SandboxRun(earlier={}, wanted=0)
        try:
            timings = self._run_wait(writes, before_each)
            with transaction.atomic():
                outcomes = self._run_answer(writes, timings, in_flight)
                self._in_flight_add(name, -1)
                answered(outcomes)
        except Exception:
            self._in_flight_add(name, -1)  # the run was rolled back: it is not in flight either
            raise
        finally:
            self._run = None
        return len(outcomes)

    def _run_wait(
        self, writes: Sequence[OutboundWrite], before_each: BeforeEach
    ) -> list[tuple[datetime, datetime]]:
        """Each write's slot and scripted latency, in turn: when each began and ended."""
        timings = []
        for index, write in enumerate(writes):
            before_each(index)
            started_at = timezone.now()
            script = self._script(write)
            if script is not None and script.latency_ms:
                time.sleep(script.latency_ms / 1000)
            timings.append((started_at, timezone.now()))
        return timings

    def _run_answer(
        self,
        writes: Sequence[OutboundWrite],
        timings: list[tuple[datetime, datetime]],
        in_flight: int,
    ) -> list[Outcome]:
        run = self._run
        assert run is not None
        keys = [w.idempotency_key for w in writes if w.operation == WriteOperation.CREATE]
        known = SandboxDocument.objects.filter(idempotency_key__in=keys)
        run.earlier = {
            key: ext for key, ext in known.values_list("idempotency_key", "external_id") if key
        }
        run.wanted = len(keys) - len(run.earlier)
        outcomes: list[Outcome] = []
        logs: list[SandboxSend] = []
        for write, timing in zip(writes, timings, strict=True):
            outcome = super().send(write)
            logs.append(self._log(write, in_flight, outcome, timing))
            outcomes.append(outcome)
            if not outcome.is_final:
                break
        run.finish()
        SandboxSend.objects.bulk_create(logs)
        return outcomes

    def _log(
        self,
        write: OutboundWrite,
        in_flight: int,
        outcome: Outcome,
        timing: tuple[datetime, datetime],
    ) -> SandboxSend:
        return SandboxSend(
            record_type=write.record_type.name,
            write_state_id=write.write_state_id,
            operation=write.operation,
            started_at=timing[0],
            finished_at=timing[1],
            in_flight=in_flight,
            worker_pid=os.getpid(),
            outcome=outcome.kind,
            external_id=outcome.external_id,
        )

    def _in_flight_add(self, record_type: str, step: int) -> int:
        """Move the gauge of ``record_type``'s writes in flight; the count after the move."""
        with transaction.atomic():
            moved = SandboxInFlight.objects.filter(record_type=record_type)
            if not moved.update(count=F("count") + step):
                SandboxInFlight.objects.get_or_create(record_type=record_type)
                moved.update(count=F("count") + step)
            return moved.values_list("count", flat=True).get()

    def send(self, write: OutboundWrite) -> Outcome:
        log = self._log_start(write)
        outcome = transient("the sandbox crashed before answering")
        try:
            outcome = super().send(write)
            return outcome
        finally:
            self._log_finish(log, outcome)

    def create(self, write: OutboundWrite) -> Outcome:
        return self._scripted(write) or self._create(write)

    def update(self, write: OutboundWrite) -> Outcome:
        return self._scripted(write) or self._update(write)

    def delete(self, write: OutboundWrite) -> Outcome:
        return self._scripted(write) or self._delete(write)

    # -- the script ---------------------------------------------------------------------------

    def _script(self, write: OutboundWrite) -> SandboxScript | None:
        if self._run is None:
            return sandbox_script_for(write.record_type.name, write.operation)
        scripts = self._run.scripts  # read once a run: a test scripts the sandbox before a drain
        if write.operation not in scripts:
            scripts[write.operation] = sandbox_script_for(write.record_type.name, write.operation)
        return scripts[write.operation]

    def _scripted(self, write: OutboundWrite) -> Outcome | None:
        script = self._script(write)
        if script is None:
            return None
        if script.latency_ms and self._run is None:  # a run waited for it already
            time.sleep(script.latency_ms / 1000)
        if script.never_answer:
            return transient(f"{self.source_name} did not answer the {write.operation} (timed out)")
        counted_down = SandboxScript.objects.filter(pk=script.pk, transient_failures__gt=0).update(
            transient_failures=F("transient_failures") - 1
        )
        if counted_down:
            return transient(f"{self.source_name} is temporarily unavailable (HTTP 503)")
        if script.refuse_code:
            message = script.refuse_message or f"{self.source_name} refused the {write.operation}"
            return refused(script.refuse_code, script.refuse_field or None, message)
        if script.settle_conflict:
            simulate = {
                WriteOperation.CREATE: self._create,
                WriteOperation.UPDATE: self._update,
                WriteOperation.DELETE: self._delete,
            }
            outcome = simulate[write.operation](write)
            if outcome.kind != VerdictKind.CONFIRMED:
                return outcome
            return settle_conflict(
                outcome.external_id,
                f"{self.source_name} applied the {write.operation} as {outcome.external_id}, "
                "but linking it back to the row failed",
            )
        return None

    # -- the simulation -----------------------------------------------------------------------

    def _missing_mandatory(self, write: OutboundWrite, *, is_create: bool) -> Outcome | None:
        for name in write.record_type.source_required:
            if (is_create or name in write.parent) and write.parent.get(name) in (None, ""):
                return refused(
                    RefusalCode.MANDATORY_FIELD_MISSING, f"parent.{name}", f"{name} is required"
                )
        return None

    def _create(self, write: OutboundWrite) -> Outcome:
        rt = write.record_type
        if rt.is_transaction and not write.lines and not write.parent.get("created_from_id"):
            return refused(
                RefusalCode.ATOMIC_WRITE_REQUIRED,
                "lines",
                f"{self.source_name} creates a {rt.name} with its lines in one write: "
                "send a non-empty lines array, or set created_from_id",
            )
        missing = self._missing_mandatory(write, is_create=True)
        if missing is not None:
            return missing
        key = write.idempotency_key
        if self._run is not None:
            return self._create_in_run(write, self._run)
        earlier = (
            SandboxDocument.objects.filter(idempotency_key=key)
            .values_list("external_id", flat=True)
            .first()
        )
        if (
            earlier is not None
        ):  # the same create, re-sent (its first answer was lost): same document
            return confirmed(earlier)
        try:
            with transaction.atomic():  # the number and the document together, or neither
                external_id = sandbox_mint(rt.id_prefix)
                SandboxDocument.objects.create(
                    external_id=external_id,
                    idempotency_key=key,
                    record_type=rt.name,
                    fields=dict(write.parent),
                    lines=list(write.lines),
                )
        except IntegrityError:  # a concurrent send of the same create got there first
            return confirmed(SandboxDocument.objects.get(idempotency_key=key).external_id)
        return confirmed(external_id)

    def _create_in_run(self, write: OutboundWrite, run: SandboxRun) -> Outcome:
        earlier = run.earlier.get(write.idempotency_key)
        if earlier is not None:  # the same create, re-sent (its first answer was lost)
            return confirmed(earlier)
        external_id = run.mint(write.record_type.id_prefix)
        run.made.append(
            SandboxDocument(
                external_id=external_id,
                idempotency_key=write.idempotency_key,
                record_type=write.record_type.name,
                fields=dict(write.parent),
                lines=list(write.lines),
            )
        )
        return confirmed(external_id)

    def _document(self, write: OutboundWrite) -> SandboxDocument | None:
        if not write.external_id:
            return None
        if self._run is not None:
            self._run.flush()  # the run's own documents first: this write may name one
        return SandboxDocument.objects.filter(
            external_id=write.external_id, record_type=write.record_type.name, is_deleted=False
        ).first()

    def _update(self, write: OutboundWrite) -> Outcome:
        document = self._document(write)
        if document is None:
            return refused(
                SourceCode.SOURCE_RECORD_MISSING,
                "externalId",
                f"{self.source_name} has no {write.record_type.name} {write.external_id}",
            )
        missing = self._missing_mandatory(write, is_create=False)
        if missing is not None:
            return missing
        document.fields = {**document.fields, **write.parent}
        document.save(update_fields=["fields", "updated_at"])
        return confirmed(document.external_id)

    def _delete(self, write: OutboundWrite) -> Outcome:
        document = self._document(write)
        if document is None:
            # Already gone: a delete re-sent after a crash must not fail the second time.
            return confirmed(write.external_id)
        referrer = (
            Record.reads.filter(fields__created_from_id=document.external_id)
            .exclude(sync_state__in=HIDDEN_STATES)
            .exclude(pk=write.pg_row_id)
            .order_by("created_at")
            .first()
        )
        if referrer is not None:
            return refused(
                RefusalCode.RECORD_REFERENCED,
                None,
                f"{write.record_type.name} {document.external_id} cannot be deleted: "
                f"{referrer.record_type} {referrer.external_id or referrer.pg_row_id} was created from it",
            )
        document.is_deleted = True
        document.save(update_fields=["is_deleted", "updated_at"])
        return confirmed(document.external_id)

    # -- the send log ---------------------------------------------------------------------------

    def _log_start(self, write: OutboundWrite) -> SandboxSend:
        name = write.record_type.name
        with transaction.atomic():
            SandboxInFlight.objects.get_or_create(record_type=name)
            SandboxInFlight.objects.filter(record_type=name).update(count=F("count") + 1)
            in_flight = SandboxInFlight.objects.get(record_type=name).count
            return SandboxSend.objects.create(
                record_type=name,
                write_state_id=write.write_state_id,
                operation=write.operation,
                started_at=timezone.now(),
                in_flight=in_flight,
                worker_pid=os.getpid(),
            )

    def _log_finish(self, log: SandboxSend, outcome: Outcome) -> None:
        with transaction.atomic():
            SandboxInFlight.objects.filter(record_type=log.record_type).update(count=F("count") - 1)
            log.finished_at, log.outcome, log.external_id = (
                timezone.now(),
                outcome.kind,
                outcome.external_id,
            )
            log.save(update_fields=["finished_at", "outcome", "external_id"])
