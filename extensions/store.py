"""The module store, read side: which version of an id is served, a given version, and its loader.

"Workers pick a new version up within 30 seconds; a slice finishes on the version it started
with." So a run pins a version *number* when it starts (``module_served(id).version``) and loads
that number for every slice (``module_load``). A stored version never changes, so its compiled
bundle is cached per (id, version) for the life of the process. Which version is *current* may
change at any deploy; that answer, and the index of deployed hooks, are cached for at most
``SERVED_TTL_S`` seconds. A deploy or remove in this process forgets every cache at once; other
processes (web workers, the qcluster) catch up within the TTL.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from extensions.errors import ExtensionNotFound
from extensions.lint import Bundle, bundle_from_stored, bundle_load
from extensions.models import ExtensionKind, ExtensionModule, ExtensionStatus, ExtensionVersion
from extensions.sandbox import LoadedModule, Sandbox

SERVED_TTL_S = 30.0
MAX_CACHED_VERSIONS = 256


@dataclass(frozen=True)
class ServedModule:
    """The version served now for one id."""

    id: str
    kind: str
    version: int
    definition: Any


@dataclass(frozen=True)
class StoredVersion:
    """One deployed version: its definition and compiled bundle, ready for a sandbox."""

    id: str
    kind: str
    version: int
    sha256: str
    definition: Any
    bundle: Bundle


_lock = threading.Lock()
_served: dict[str, tuple[float, ServedModule | None]] = {}
_hook_index: tuple[float, dict[tuple[str, str], list[ServedModule]]] | None = None
_versions: OrderedDict[tuple[str, int], StoredVersion] = OrderedDict()
# Caches other rooms build from the store (processes' trigger index): forgotten with it.
_forget_listeners: list[Callable[[], None]] = []


def store_forget_connect(listener: Callable[[], None]) -> None:
    """Call ``listener`` whenever this process forgets the store (a deploy or remove here)."""
    if listener not in _forget_listeners:
        _forget_listeners.append(listener)


def store_forget() -> None:
    """Drop every cached answer in this process (a deploy or remove just happened here)."""
    global _hook_index
    with _lock:
        _served.clear()
        _versions.clear()
        _hook_index = None
    for listener in _forget_listeners:
        listener()


def _served_of(module: ExtensionModule) -> ServedModule:
    return ServedModule(
        id=module.id, kind=module.kind, version=module.version, definition=module.definition
    )


def module_served(module_id: str) -> ServedModule | None:
    """The active version of ``module_id``, or None when it is not deployed (≤30 s stale)."""
    now = time.monotonic()
    with _lock:
        cached = _served.get(module_id)
    if cached is not None and now - cached[0] < SERVED_TTL_S:
        return cached[1]
    module = ExtensionModule.objects.filter(pk=module_id, status=ExtensionStatus.ACTIVE).first()
    served = _served_of(module) if module is not None else None
    with _lock:
        _served[module_id] = (now, served)
    return served


def module_version(module_id: str, version: int) -> StoredVersion:
    """A given deployed version (removed ones included: a pinned slice finishes on it)."""
    key = (module_id, int(version))
    with _lock:
        cached = _versions.get(key)
        if cached is not None:
            _versions.move_to_end(key)
            return cached
    row = (
        ExtensionVersion.objects.select_related("module")
        .filter(module_id=module_id, version=version)
        .first()
    )
    if row is None:
        raise ExtensionNotFound(
            f"no version {version} of extension {module_id!r} is stored", id=module_id
        )
    stored = StoredVersion(
        id=row.module_id,
        kind=row.module.kind,
        version=row.version,
        sha256=row.sha256,
        definition=row.definition,
        bundle=bundle_from_stored(entry=row.entry, sources=row.source, compiled=row.compiled),
    )
    with _lock:
        _versions[key] = stored
        while len(_versions) > MAX_CACHED_VERSIONS:
            _versions.popitem(last=False)
    return stored


def module_load(sandbox: Sandbox, *, module_id: str, version: int) -> LoadedModule:
    """Evaluate version ``version`` of ``module_id`` in ``sandbox`` — the worker's loader."""
    return bundle_load(sandbox, module_version(module_id, version).bundle)


def hooks_served(slot: str, record_type: str) -> list[ServedModule]:
    """The active hooks for one slot and record type, in id order (≤30 s stale)."""
    global _hook_index
    now = time.monotonic()
    with _lock:
        index = _hook_index
    if index is None or now - index[0] >= SERVED_TTL_S:
        built: dict[tuple[str, str], list[ServedModule]] = {}
        modules = ExtensionModule.objects.filter(
            kind=ExtensionKind.HOOK, status=ExtensionStatus.ACTIVE
        )
        for module in modules.order_by("id"):
            definition = module.definition if isinstance(module.definition, dict) else {}
            key = (str(definition.get("on")), str(definition.get("recordType")))
            built.setdefault(key, []).append(_served_of(module))
        index = (now, built)
        with _lock:
            _hook_index = index
    return list(index[1].get((slot, record_type), ()))


def extensions_list() -> list[dict[str, Any]]:
    """Every stored id with its served version's facts, for ``GET /v1/extensions``."""
    modules = ExtensionModule.objects.order_by("id")
    versions = {
        (v.module_id, v.version): v
        for v in ExtensionVersion.objects.select_related("deployed_by").filter(
            module_id__in=[m.id for m in modules]
        )
    }
    listed = []
    for module in modules:
        version = versions.get((module.id, module.version))
        listed.append(
            {
                "id": module.id,
                "kind": module.kind,
                "version": module.version,
                "status": module.status,
                "deployedBy": version.deployed_by.get_username()
                if version and version.deployed_by
                else None,
                "deployedAt": version.deployed_at.isoformat() if version else None,
                "sha256": version.sha256 if version else None,
            }
        )
    return listed
