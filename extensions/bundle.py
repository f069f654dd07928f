"""A bundle: a whole project folder (``processes/``, ``hooks/``, ``turbobase/schedules.json``)
deployed as ONE plan — ``turbobase ext deploy --to <env>``.

The request (``POST /v1/extensions/bundle/plan`` and ``…/bundle/apply``)::

    {"modules":   [{"entry": "processes/po.ts", "files": {"processes/po.ts": "…", …}}, …],
     "schedules": [{name, scheduleKind, scheduleExpr, scheduleTz, body}, …],   # optional
     "removes":   ["acme:old-process", …]}                                     # optional

How it is applied:

1. **Prepare every module**, exactly as a single deploy does (``extension_prepare``: fold, transpile,
   evaluate in a sandbox child, the kind's validator, the id-literal trap ``extension_id_mismatch``)
   — outside any transaction, because evaluation is slow. The first refusal refuses the whole
   bundle, its field prefixed with the module's place (``modules[2].id``).
2. **Plan against the instance**: each module is ``new``, ``replaced`` or ``unchanged`` (same sha256
   as the version served now); each ``removes`` id must be deployed and not declared; every other
   part of the body (``schedules``) goes to the part registered for that key by a higher room
   (``bundle_part_register``), which checks it against the modules the deploy *leaves behind* —
   a process declared in the same bundle counts. Anything deployed that the bundle neither
   declares nor removes is listed as ``undeclared`` (not touched).
3. **Apply** (only ``/apply``) in one transaction: the plan is made again inside it (so a deploy
   that landed meanwhile is seen), then new and replaced modules are stored (unchanged ones are
   not: no new version), the parts applied, and the removes done through ``extension_remove`` —
   whose ``extension_removing`` receivers see the parts' new state. Any refusal rolls all of it back.

A part absent from the body is not changed (the stored schedules survive as they are, and still
must run a deployed process); a part sent is the whole truth (``"schedules": []`` removes them all).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from extensions.bundle_parts import PlanChange, bundle_parts
from extensions.deploy import (
    PreparedExtension,
    extension_prepare,
    extension_remove,
    extension_store,
)
from extensions.errors import ExtensionInvalid, ExtensionNotFound
from extensions.models import DeployOutcome, ExtensionModule, ExtensionStatus, ExtensionVersion
from kernel.errors import TurbobaseError

MAX_MODULES = 200
CORE_KEYS = ("modules", "removes")


@dataclass(frozen=True)
class BundleRequest:
    modules: list[tuple[str, dict[str, str]]]
    removes: list[str]
    parts: dict[str, Any]  # parsed, for the keys the body carried


@dataclass(frozen=True)
class ModuleChange:
    """What the plan does with one declared module."""

    id: str
    kind: str
    entry: str
    sha256: str
    change: PlanChange  # never REMOVED: a module removed is listed apart
    version: int | None  # the version served now, if any

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "entry": self.entry,
            "sha256": self.sha256,
            "change": self.change,
            "deployedVersion": self.version,
        }


@dataclass
class BundlePlan:
    """The whole plan; ``as_dict`` is the body of ``/bundle/plan``."""

    modules: list[ModuleChange]
    removes: list[dict[str, Any]]
    undeclared: list[dict[str, Any]]
    parts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "modules": [m.as_dict() for m in self.modules],
            "removes": self.removes,
            "undeclared": self.undeclared,
            **{key: items for key, items in self.parts.items()},
        }


# --- the request ---------------------------------------------------------------------------


def _refuse(message: str, field_name: str) -> ExtensionInvalid:
    return ExtensionInvalid(message, field=field_name)


def _module_parse(index: int, raw: Any) -> tuple[str, dict[str, str]]:
    where = f"modules[{index}]"
    if not isinstance(raw, dict):
        raise _refuse(f"{where} must be an object {{entry, files}}", where)
    entry, files = raw.get("entry"), raw.get("files")
    if not isinstance(entry, str) or not entry:
        raise _refuse(
            f"{where}.entry is required: the path of the extension's file", f"{where}.entry"
        )
    if (
        not isinstance(files, dict)
        or not files
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
    ):
        raise _refuse(f"{where}.files must be an object of {{path: source text}}", f"{where}.files")
    return entry, dict(files)


def bundle_request_parse(data: Any) -> BundleRequest:
    """The body's shape: modules, removes, and every registered part's own parse."""
    if not isinstance(data, dict):
        raise _refuse("the body must be an object {modules, schedules?, removes?}", "body")
    unknown = sorted(set(data) - set(CORE_KEYS) - set(bundle_parts()))
    if unknown:
        raise _refuse(
            f"{unknown[0]} is not part of a bundle (modules, removes, "
            f"{', '.join(sorted(bundle_parts())) or '…'})",
            unknown[0],
        )
    modules = data.get("modules", [])
    if not isinstance(modules, list) or len(modules) > MAX_MODULES:
        raise _refuse(
            f"modules must be a list of at most {MAX_MODULES} {{entry, files}}", "modules"
        )
    removes = data.get("removes", [])
    if not isinstance(removes, list) or not all(isinstance(r, str) and r for r in removes):
        raise _refuse("removes must be a list of extension ids", "removes")
    parts = {
        key: part.parse(data[key]) for key, part in sorted(bundle_parts().items()) if key in data
    }
    return BundleRequest(
        modules=[_module_parse(i, m) for i, m in enumerate(modules)],
        removes=list(removes),
        parts=parts,
    )


@contextmanager
def _at_module(index: int, entry: str) -> Iterator[None]:
    """Name the module a refusal came from: ``field`` gets the ``modules[i].`` prefix."""
    try:
        yield
    except TurbobaseError as exc:
        inner = getattr(exc, "field", None)
        if hasattr(exc, "field"):
            exc.field = f"modules[{index}].{inner}" if inner else f"modules[{index}]"
        exc.extra.setdefault("entry", entry)
        raise


def modules_prepare(request: BundleRequest) -> list[PreparedExtension]:
    """Every module through ``extension_prepare``; the first refusal refuses the bundle."""
    prepared: list[PreparedExtension] = []
    seen: dict[str, int] = {}
    for index, (entry, files) in enumerate(request.modules):
        with _at_module(index, entry):
            module = extension_prepare(entry=entry, files=files)
        if module.module_id in seen:
            raise _refuse(
                f"{module.module_id!r} is declared twice (also modules[{seen[module.module_id]}])",
                f"modules[{index}].id",
            )
        seen[module.module_id] = index
        prepared.append(module)
    return prepared


# --- the plan ------------------------------------------------------------------------------


def _module_changes(
    prepared: list[PreparedExtension], active: dict[str, ExtensionModule]
) -> list[ModuleChange]:
    served = {
        (v.module_id, v.version): v.sha256
        for v in ExtensionVersion.objects.filter(
            module_id__in=[p.module_id for p in prepared if p.module_id in active]
        )
    }
    changes = []
    for index, module in enumerate(prepared):
        current = active.get(module.module_id)
        if current is not None and current.kind != module.kind:
            raise _refuse(
                f"{module.module_id!r} is deployed as a {current.kind}; remove it before deploying "
                f"a {module.kind} under that id",
                f"modules[{index}].id",
            )
        if current is None:
            change = PlanChange.NEW
        elif served.get((current.id, current.version)) == module.bundle.sha256:
            change = PlanChange.UNCHANGED
        else:
            change = PlanChange.REPLACED
        changes.append(
            ModuleChange(
                id=module.module_id,
                kind=module.kind,
                entry=module.bundle.entry,
                sha256=module.bundle.sha256,
                change=change,
                version=current.version if current else None,
            )
        )
    return changes


def _removes_check(
    request: BundleRequest, declared: set[str], active: dict[str, ExtensionModule]
) -> None:
    seen: set[str] = set()
    for index, module_id in enumerate(request.removes):
        where = f"removes[{index}]"
        if module_id not in active:
            raise ExtensionNotFound(
                f"no deployed extension has the id {module_id!r}", id=module_id, field=where
            )
        if module_id in declared or module_id in seen:
            raise _refuse(f"{module_id!r} is both removed and declared (or removed twice)", where)
        seen.add(module_id)


def bundle_plan_make(
    request: BundleRequest, prepared: list[PreparedExtension], *, by: Any
) -> BundlePlan:
    """The plan against the instance as it is now; every check, nothing written."""
    active = {m.id: m for m in ExtensionModule.objects.filter(status=ExtensionStatus.ACTIVE)}
    declared = {p.module_id for p in prepared}
    modules = _module_changes(prepared, active)
    _removes_check(request, declared, active)
    removing = set(request.removes)
    modules_after = {i: m.kind for i, m in active.items() if i not in removing}
    modules_after.update({p.module_id: p.kind for p in prepared})
    parts: dict[str, list[dict[str, Any]]] = {}
    for key, part in sorted(bundle_parts().items()):
        parsed = request.parts.get(key)
        part.check(parsed, modules_after=modules_after, removing=removing, by=by)
        parts[key] = part.diff(parsed)
    removes = []
    for module_id in request.removes:
        alongside = [
            f"{key}:{item['name']}"
            for key, items in parts.items()
            for item in items
            if item.get("change") == PlanChange.REMOVED and item.get("process") == module_id
        ]
        removes.append({"id": module_id, "kind": active[module_id].kind, "alongside": alongside})
    undeclared = [
        {"id": m.id, "kind": m.kind, "version": m.version}
        for i, m in sorted(active.items())
        if i not in declared and i not in removing
    ]
    return BundlePlan(modules=modules, removes=removes, undeclared=undeclared, parts=parts)


def bundle_plan(*, data: Any, by: Any) -> BundlePlan:
    """``POST /v1/extensions/bundle/plan``: validate the whole bundle and say what would change."""
    request = bundle_request_parse(data)
    return bundle_plan_make(request, modules_prepare(request), by=by)


def bundle_apply(*, data: Any, by: Any, now: datetime | None = None) -> dict[str, Any]:
    """``POST /v1/extensions/bundle/apply``: the plan, then all of it in one transaction."""
    request = bundle_request_parse(data)
    prepared = modules_prepare(request)
    now = now or timezone.now()
    with transaction.atomic():
        plan = bundle_plan_make(request, prepared, by=by)
        changes = {c.id: c for c in plan.modules}
        modules = []
        for module in prepared:
            change = changes[module.module_id]
            if change.change == PlanChange.UNCHANGED:
                modules.append(
                    {
                        "id": module.module_id,
                        "kind": module.kind,
                        "version": change.version,
                        "outcome": DeployOutcome.UNCHANGED,
                        "status": ExtensionStatus.ACTIVE,
                    }
                )
                continue
            result = extension_store(module, by=by)
            modules.append(
                {
                    "id": result.id,
                    "kind": result.kind,
                    "version": result.version,
                    "outcome": result.outcome,
                    "status": result.status,
                }
            )
        registered = bundle_parts()
        parts = {
            key: registered[key].apply(parsed, by=by, now=now)
            for key, parsed in sorted(request.parts.items())
        }
        removed = []
        for module_id in request.removes:
            gone = extension_remove(module_id=module_id, by=by)
            removed.append({"id": gone.id, "kind": gone.kind, "status": gone.status})
    return {"modules": modules, "removed": removed, "undeclared": plan.undeclared, **parts}
