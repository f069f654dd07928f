"""Adapter registry: the catalog's ``sources.<name>.adapter`` names a class registered here."""

from __future__ import annotations

from records.catalog import catalog_load
from sources.adapters.base import SourceAdapter
from sources.adapters.http import HttpAdapter
from sources.adapters.sandbox import SandboxAdapter
from sources.errors import AdapterNotFound

_REGISTRY: dict[str, type[SourceAdapter]] = {}


def adapter_register(name: str, adapter_class: type[SourceAdapter]) -> None:
    """Make an adapter available to catalogs under ``name`` (call from an ``AppConfig.ready()``)."""
    _REGISTRY[name] = adapter_class


def adapter_for_source(source_name: str) -> SourceAdapter:
    """The adapter configured for ``source_name`` in the catalog, ready to send."""
    config = catalog_load().sources.get(source_name)
    if config is None:
        raise AdapterNotFound(f"the catalog has no source named {source_name!r}")
    adapter_name = config.get("adapter", "")
    adapter_class = _REGISTRY.get(adapter_name)
    if adapter_class is None:
        raise AdapterNotFound(
            f"source {source_name!r} names adapter {adapter_name!r}; this instance has {sorted(_REGISTRY)}"
        )
    return adapter_class(source_name=source_name, config=config)


adapter_register("sandbox", SandboxAdapter)
adapter_register("http", HttpAdapter)
