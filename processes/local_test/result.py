"""What a local run reports: its final state, its ledger, the records it wrote, what it left
waiting (held deletes, open tasks), and how much virtual and wall time it took."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from guardrails.models import HeldDelete
from processes.models import ProcessRun, RunState
from processes.step_kinds import RECORD, entry_kind
from records.models import Record


@dataclass(frozen=True)
class LedgerLine:
    step: str
    kind: str  # sleep, waitFor, task, ai, or the record step's create/update/delete
    outcome: str  # the ledger row's disposition
    record_type: str = ""
    pg_row_id: str | None = None
    external_id: str | None = None
    code: str | None = None
    field: str | None = None
    message: str | None = None

    def expected(self) -> dict[str, str]:
        """The part a test file pins: the step, its kind and its outcome."""
        return {"step": self.step, "kind": self.kind, "outcome": self.outcome}


@dataclass
class LocalRun:
    """One process run performed locally. ``committed`` is what the CLI's exit code says."""

    run_id: str
    process_id: str
    state: str
    reason: str | None
    outstanding: int
    waiting: str  # the run's pending reason when it stopped going ("" once it ended)
    ledger: list[LedgerLine]
    records: list[dict[str, Any]]
    held_deletes: list[dict[str, Any]] = field(default_factory=list)
    virtual_seconds: float = 0.0
    wall_seconds: float = 0.0

    @property
    def committed(self) -> bool:
        return self.state == RunState.COMMITTED

    def table(self) -> str:
        """The ledger as a table, the records, the held deletes and the final state."""
        return ledger_table(self)

    def as_dict(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "processId": self.process_id,
            "state": self.state,
            "reason": self.reason,
            "outstanding": self.outstanding,
            "waiting": self.waiting or None,
            "ledger": [
                {k: v for k, v in asdict(line).items() if v not in (None, "")}
                for line in self.ledger
            ],
            "records": self.records,
            "heldDeletes": self.held_deletes,
            "virtualSeconds": self.virtual_seconds,
            "wallSeconds": round(self.wall_seconds, 3),
        }


def step_kinds(definition: dict[str, Any]) -> dict[str, str]:
    """Step id → kind name, through groups, from the deployed definition."""
    kinds: dict[str, str] = {}
    for entry in definition.get("steps") or []:
        if not isinstance(entry, dict):
            continue
        kind = entry_kind(entry)
        kinds[str(entry.get("id"))] = kind.name
        if isinstance(entry.get("steps"), list):
            kinds.update(step_kinds(entry))
    return kinds


def local_run_read(run: ProcessRun, definition: dict[str, Any]) -> LocalRun:
    """The run as it stands, with its ledger, records and held deletes."""
    kinds = step_kinds(definition)
    ledger = []
    for row in run.ledger.order_by("sequence", "id"):
        kind = kinds.get(row.step_id, RECORD.name)
        ledger.append(
            LedgerLine(
                step=row.step_id,
                kind=row.action if kind == RECORD.name else kind,
                outcome=row.disposition,
                record_type=row.record_type,
                pg_row_id=str(row.pg_row_id) if row.pg_row_id else None,
                external_id=row.external_id,
                code=row.refusal_code,
                field=row.refusal_field,
                message=row.refusal_message,
            )
        )
    ids = list(dict.fromkeys(line.pg_row_id for line in ledger if line.pg_row_id))
    found = {str(r.pg_row_id): r for r in Record.reads.filter(pk__in=ids)}
    records = [  # in the order the ledger first names them
        {
            "recordType": record.record_type,
            "pgRowId": str(record.pg_row_id),
            "externalId": record.external_id,
            "syncState": record.sync_state,
            "parent": record.fields,
            "lines": record.lines,
        }
        for record in (found[i] for i in ids if i in found)
    ]
    held = [
        {
            "recordType": h.record_type,
            "pgRowId": str(h.pg_row_id),
            "externalId": h.external_id,
            "step": h.process_step,
        }
        for h in HeldDelete.objects.filter(process_run_id=str(run.pk)).order_by("pk")
    ]
    return LocalRun(
        run_id=str(run.pk),
        process_id=run.process_id,
        state=run.state,
        reason=run.reason,
        outstanding=run.outstanding,
        waiting="" if run.is_terminal else run.pending_reason,
        ledger=ledger,
        records=records,
        held_deletes=held,
    )


def ledger_table(result: LocalRun) -> str:
    """The run as a person reads it: a ledger table, the records, the held deletes, the state."""
    header = ("step", "kind", "outcome", "record", "code")
    # A step that did not wait for the source has no external id on its row: the record's own.
    minted = {r["pgRowId"]: r["externalId"] for r in result.records}
    rows = [
        (
            line.step,
            line.kind,
            line.outcome,
            " ".join(
                filter(
                    None,
                    (
                        line.record_type,
                        line.external_id or minted.get(line.pg_row_id or "") or line.pg_row_id,
                    ),
                )
            ),
            " ".join(filter(None, (line.code, f"({line.field})" if line.field else ""))),
        )
        for line in result.ledger
    ]
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    out = [
        "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in (header, *rows)
    ]
    out.append("")
    out.append(f"records written: {len(result.records)}")
    out += [
        f"  {r['recordType']} {r['externalId'] or r['pgRowId']} ({r['syncState']}) "
        f"{_compact(r['parent'])}"
        for r in result.records
    ]
    out += [
        f"held delete: {h['recordType']} {h['externalId'] or h['pgRowId']} (step {h['step']}), "
        "waiting for an operator"
        for h in result.held_deletes
    ]
    waiting = f", waiting: {result.waiting}" if result.waiting else ""
    waiting += f", {result.outstanding} step(s) outstanding" if result.outstanding else ""
    out.append(
        f"state: {result.state}{waiting} (virtual time {_span(result.virtual_seconds)}, "
        f"wall {result.wall_seconds:.2f}s)"
    )
    if result.reason:
        out.append(f"reason: {result.reason}")
    return "\n".join(out)


def _compact(value: Any) -> str:
    import json

    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 100 else text[:97] + "..."


def _span(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.4g}{unit}"
    return f"{seconds:.4g}s"
