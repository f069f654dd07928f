"""Invoking a process: validate, check the switches, write a queued run, enqueue it. 202.

Two doors: ``run_invoke`` (a person asked over HTTP: a failed check raises, the answer is 4xx and
no run is written) and ``run_start`` (a trigger or a schedule, where nobody is waiting on an
answer: a failed check is recorded as a run in state ``refused`` naming the field or switch).
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import JSONField, Value
from django.utils import timezone

from extensions.models import ExtensionModule
from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from kernel.schemas import SchemaUnusable, schema_errors, schema_validator
from processes.catalog import process_module_get
from processes.codes import ProcessCode
from processes.engine.lease import lease_seconds
from processes.errors import InputInvalid, InputSchemaUnusable, ModeInvalid, ProcessDisabled
from processes.lanes import lane_send
from processes.models import PendingReason, Process, ProcessRun, RunMode
from processes.run_search.keys import search_keys_write
from processes.status import MOVES, RunMove


def access_fingerprint(user: User) -> str:
    """What the invoker's access is now; a run's reads are refused once it changes."""
    groups = ",".join(sorted(user.groups.values_list("name", flat=True)))
    raw = f"{user.pk}|{user.is_active}|{user.is_staff}|{user.is_superuser}|{groups}"
    return hashlib.sha256(raw.encode()).hexdigest()


def switch_check(process_id: str) -> bool:
    """409 ``process_disabled`` naming the switch, when this process or every process is off.

    Answers whether the process has its row (no switch was ever set: it is written on first use)."""
    if not setting_get(SettingKey.PROCESSES_ENABLED):
        raise ProcessDisabled(
            "every process on this instance is switched off (processes.enabled)",
            switch="processes.enabled",
            id=process_id,
            reason="every process on the instance is switched off",
        )
    process = Process.objects.filter(pk=process_id).only("is_enabled", "disabled_reason").first()
    if process is not None and not process.is_enabled:
        reason = process.disabled_reason or f"an administrator switched {process_id} off"
        raise ProcessDisabled(
            f"{process_id} is switched off",
            switch=f"{process_id}.enabled",
            id=process_id,
            reason=reason,
        )
    return process is not None


def input_check(schema: dict, body: Any) -> None:
    """400 ``invalid_input`` naming the first field that fails the schema; 409
    ``input_schema_unusable`` naming where the schema itself fails (one stored before the deploy
    refused it: nothing is fetched for it, and it never raises anything else)."""
    try:
        errors = schema_errors(schema_validator(schema), body)
    except SchemaUnusable as exc:
        raise InputSchemaUnusable(
            f"the deployed input schema cannot be used: {exc.problem.message}",
            field=exc.problem.at("input"),
        ) from exc
    error = next(iter(sorted(errors, key=lambda e: list(e.path))), None)
    if error is None:
        return
    path = ".".join(str(p) for p in error.path)
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = next((name for name in error.validator_value if name not in error.instance), None)
        path = f"{path}.{missing}" if path and missing else (missing or path)
    elif error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set((error.schema or {}).get("properties", {}))
        extra = next((name for name in error.instance if name not in allowed), None)
        path = f"{path}.{extra}" if path and extra else (extra or path)
    raise InputInvalid(error.message, field=path or "body")


def mode_parse(raw: str | None) -> str:
    if raw in (None, ""):
        return RunMode.ASYNC
    if raw not in RunMode.values:
        raise ModeInvalid(f"mode must be sync or async, not {raw!r}", field="mode")
    return raw


def _claimed_columns(claimed_by: str, now: datetime) -> dict[str, Any]:
    """The columns of a run written as its claim leaves it, leased to ``claimed_by``."""
    return {
        "state": MOVES[RunMove.CLAIM].target,
        "pending_reason": PendingReason.RUNNING,
        "lease_owner": claimed_by,
        "lease_until": now + timedelta(seconds=lease_seconds()),
        "started_at": now,
        "slices": 1,  # a chain's one pass (ChainRunner.walk)
    }


def run_invoke(
    *,
    process_id: str,
    body: Any,
    user: User,
    mode: str = RunMode.ASYNC,
    schedule_name: str = "",
    idempotency_key: str | None = None,
    send: bool = True,
    module: ExtensionModule | None = None,
    linked_from: ProcessRun | None = None,
    linked_how: str = "",
    claimed_by: str | None = None,
) -> ProcessRun:
    """Queue a run of ``process_id`` as ``user``: its row committed, its delivery sent to its lane.

    ``send=False`` (a sync run the request delivers itself, ``processes.sync_run``) writes the
    same row, noted as sent now, and hands the broker nothing: if the request never claims it,
    the lane's redelivery watch sends it a lease later, as it does any lost delivery.
    ``module``: the served module the caller already read (``process_module_get``).
    ``linked_from``: the run a retry or a redirect starts it from (``processes.steering``).
    ``claimed_by`` (with ``send=False``): the lease token of the request that delivers the run
    itself — the row is written as its claim leaves a run (running, leased to that token,
    started, one slice), so the delivery needs no claim UPDATE and no re-read of the row; if the
    request dies, the lease runs out and the redelivery watch sends the run to its lane."""
    module = module or process_module_get(process_id)
    has_row = switch_check(process_id)
    input_check(module.definition.get("input") or {}, body)
    now = timezone.now()
    claim = {} if claimed_by is None else _claimed_columns(claimed_by, now)
    with transaction.atomic():
        if not has_row:  # process rows are never deleted: one that was read is still there
            Process.objects.get_or_create(pk=process_id)
        run = ProcessRun.objects.create(
            process_id=process_id,
            mode=mode,
            input=body,
            invoked_by=user,
            module_version=module.version,
            schedule_name=schedule_name,
            idempotency_key=idempotency_key,
            linked_from=linked_from,
            linked_how=linked_how,
            delivery=1,
            enqueued_at=now,
            access_fingerprint=access_fingerprint(user),
            **claim,
        )
        search_keys_write(run, module.definition, body)
        if send:
            lane_send(run_id=run.run_id, delivery=1, mode=mode)
    return run


def run_start(
    *,
    process_id: str,
    body: Any,
    user: User,
    schedule_name: str = "",
    idempotency_key: str | None = None,
) -> ProcessRun:
    """Start a run nobody waits on (a trigger, a schedule): queued, or refused with the reason.

    A switch that is off, an input the schema refuses or a deployed schema that cannot be applied
    does not raise: it is recorded as a run in state ``refused`` whose reason names the switch or
    the field, so whoever fired it can see why nothing ran. A process that is not deployed still
    raises ``ProcessNotFound``.
    ``idempotency_key`` (unique on the run) makes it once only: a second start with the same key,
    however concurrent, answers the run the first one wrote and writes nothing.
    """
    if idempotency_key:
        existing = ProcessRun.objects.filter(idempotency_key=idempotency_key).first()
        if existing is not None:
            return existing
    try:
        return _run_start(
            process_id=process_id,
            body=body,
            user=user,
            schedule_name=schedule_name,
            idempotency_key=idempotency_key,
        )
    except IntegrityError:
        # A concurrent start with the key committed first; our savepoint rolled back.
        existing = ProcessRun.objects.filter(idempotency_key=idempotency_key).first()
        if not idempotency_key or existing is None:
            raise
        return existing


def _run_start(
    *,
    process_id: str,
    body: Any,
    user: User,
    schedule_name: str,
    idempotency_key: str | None,
) -> ProcessRun:
    try:
        return run_invoke(
            process_id=process_id,
            body=body,
            user=user,
            schedule_name=schedule_name,
            idempotency_key=idempotency_key,
        )
    except ProcessDisabled as exc:
        code, field, message = exc.code, exc.switch, str(exc.extra.get("reason") or exc.message)
    except InputInvalid as exc:
        code, message = exc.code, exc.message
        field = "input" if exc.field in (None, "", "body") else f"input.{exc.field}"
    except InputSchemaUnusable as exc:
        # The schema, not the input, is at fault: the write or event that fired it still lands.
        code, field, message = exc.code, exc.field or "input", exc.message
    return run_refuse(
        process_id=process_id,
        body=body,
        user=user,
        schedule_name=schedule_name,
        idempotency_key=idempotency_key,
        code=code,
        field=field,
        message=message,
    )


def refusal_prefix(code: str, field: str) -> str:
    """How a refused run's reason begins: the switch or the field it names."""
    if code == ProcessCode.PROCESS_DISABLED:
        return f"switched off ({field}): "
    return f"{field}: "


def run_refuse(
    *,
    process_id: str,
    body: Any,
    user: User,
    code: str,
    field: str,
    message: str,
    schedule_name: str = "",
    idempotency_key: str | None = None,
) -> ProcessRun:
    """Write a run that a check refused before its first step: ended, never queued, never run.

    Its reason is ``message`` after the field or switch (``refusal_prefix``)."""
    module = process_module_get(process_id)
    now = timezone.now()
    with transaction.atomic():
        Process.objects.get_or_create(pk=process_id)
        run = ProcessRun.objects.create(
            process_id=process_id,
            mode=RunMode.ASYNC,
            state=MOVES[RunMove.REFUSE].target,
            pending_reason=PendingReason.NONE,
            reason=refusal_prefix(code, field) + message,
            refusal_code=code,
            refusal_field=field,
            # A JSON null input is kept as JSON null, not as SQL NULL (the column is not nullable).
            input=Value(None, JSONField()) if body is None else body,
            invoked_by=user,
            module_version=module.version,
            schedule_name=schedule_name,
            idempotency_key=idempotency_key,
            finished_at=now,
            access_fingerprint=access_fingerprint(user),
        )
        search_keys_write(run, module.definition, body)
    run.input = body
    return run
