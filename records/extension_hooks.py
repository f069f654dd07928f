"""Deployed ``defineHook`` extensions, served to the write boundary's hook slots.

``hook_contract_check`` is the deploy-time validator for kind ``hook``; ``deployed_hooks`` is the
provider ``records.hooks`` asks for each slot and record type. Both are registered from
``RecordsConfig.ready()``.

What a deployed hook's ``run(ctx)`` decides:
- returns nothing (or anything without ``reject``): the write goes through;
- returns ``{ reject: { code, field, message } }``: the write is refused with that code and
  field (``HookRejection``, 422), exactly as a Python hook's rejection is;
- throws, reaches for something the sandbox does not give it, or returns a ``reject`` without a
  code: the write is refused with ``HOOK_FAILED``; runs past its CPU budget: ``HOOK_TIMEOUT``.
  A broken hook never lets a write through unchecked; the message names the hook and the
  sandbox's own error (with its line in the author's file).

Each thread keeps one sandbox child per hook version and starts a fresh run (``new_run``) before
every call, so nothing one write's hook leaves behind is seen by the next.
"""

from __future__ import annotations

from typing import Any

from extensions.errors import ExtensionInvalid, ExtensionNotFound
from extensions.pool import sandbox_pooled
from extensions.sandbox import SandboxError, SandboxLimits, SandboxTimeout
from extensions.store import ServedModule, hooks_served, store_forget
from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from records.catalog import catalog_load
from records.codes import RefusalCode
from records.errors import HookRejection
from records.hooks import SLOTS, Hook, HookContext

HOOK_FAILED = RefusalCode.HOOK_FAILED
HOOK_TIMEOUT = RefusalCode.HOOK_TIMEOUT


class HookContractInvalid(ExtensionInvalid):
    """The hook does not satisfy the defineHook contract."""

    code = RefusalCode.HOOK_CONTRACT_INVALID


def _is_function(value: Any) -> bool:
    return isinstance(value, dict) and value.get("$fn") is True


def hook_contract_check(definition: Any) -> dict:
    """Validate a described ``defineHook`` default export; returns it or raises naming the field."""
    if not isinstance(definition, dict):
        raise HookContractInvalid(
            "default: the default export must be defineHook({...})", field="default"
        )
    hook_id = definition.get("id")
    if not isinstance(hook_id, str) or not hook_id.strip():
        raise HookContractInvalid("id: is required and must be a string", field="id")
    record_type = definition.get("recordType")
    if not isinstance(record_type, str) or record_type not in catalog_load().types:
        raise HookContractInvalid(
            f"recordType: {record_type!r} is not a record type the write boundary accepts",
            field="recordType",
        )
    if definition.get("on") not in SLOTS:
        raise HookContractInvalid(f"on: must be one of {', '.join(SLOTS)}", field="on")
    if not _is_function(definition.get("run")):
        raise HookContractInvalid(
            "run: is required and must be a function (ctx) => rejection | void", field="run"
        )
    return definition


def hook_limits() -> SandboxLimits:
    """One hook call's CPU budget (read at call time); every call starts the budget afresh."""
    cpu_ms = setting_get(SettingKey.EXTENSIONS_HOOK_CPU_MS)
    return SandboxLimits(call_budget_ms=cpu_ms, slice_budget_ms=max(cpu_ms * 100, 30_000))


def _context_json(context: HookContext) -> dict[str, Any]:
    record = context.record
    return {
        "slot": context.slot,
        "recordType": context.record_type,
        "operation": context.operation,
        "record": {
            "pgRowId": record.get("pgRowId"),
            "externalId": record.get("externalId"),
            "parent": record.get("parent") or {},
            "lines": record.get("lines") or [],
        },
        "changes": dict(context.changes),
    }


def _verdict(hook_id: str, result: Any) -> None:
    if not isinstance(result, dict) or result.get("reject") is None:
        return
    reject = result["reject"]
    code = reject.get("code") if isinstance(reject, dict) else None
    if not isinstance(code, str) or not code.strip():
        raise HookRejection(f"hook {hook_id} returned a rejection without a code", code=HOOK_FAILED)
    field = reject.get("field")
    message = reject.get("message")
    raise HookRejection(
        str(message) if message else f"rejected by hook {hook_id}",
        code=code,
        field=field if isinstance(field, str) and field else None,
    )


class DeployedHook:
    """A callable hook for the boundary, running one deployed hook version in the sandbox."""

    def __init__(self, hook: ServedModule) -> None:
        self.hook = hook

    def __repr__(self) -> str:
        return f"DeployedHook({self.hook.id!r} v{self.hook.version})"

    def __call__(self, context: HookContext) -> None:
        try:
            box = sandbox_pooled(
                module_id=self.hook.id, version=self.hook.version, limits=hook_limits()
            )
        except ExtensionNotFound:
            # The index outlived the stored version (it is ≤30 s stale): no such hook any more.
            store_forget()
            return
        except SandboxError as exc:
            code = HOOK_TIMEOUT if isinstance(exc, SandboxTimeout) else HOOK_FAILED
            raise HookRejection(
                f"hook {self.hook.id} failed to load ({exc.code}): {exc}", code=code
            ) from exc
        try:
            box.slice_start()
            box.new_run()
            result = box.call(["run"], [], ctx=_context_json(context))
        except SandboxTimeout as exc:
            raise HookRejection(
                f"hook {self.hook.id} ran past its CPU budget: {exc}", code=HOOK_TIMEOUT
            ) from exc
        except SandboxError as exc:
            raise HookRejection(
                f"hook {self.hook.id} failed ({exc.code}): {exc}", code=HOOK_FAILED
            ) from exc
        except TypeError as exc:  # a record value that is not JSON cannot be shown to the hook
            raise HookRejection(
                f"hook {self.hook.id} could not be given the record: {exc}", code=HOOK_FAILED
            ) from exc
        _verdict(self.hook.id, result)


def deployed_hooks(slot: str, record_type: str) -> list[Hook]:
    """The ``records.hooks`` provider: every active deployed hook for this slot and type."""
    return [DeployedHook(hook) for hook in hooks_served(slot, record_type)]
