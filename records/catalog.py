"""The record catalog: which record types exist, where they live, and who may read and write them.

Loaded lazily from ``settings.TURBOBASE_CATALOG`` (a JSON file); the shipped default holds the
seed's types. Cached per process; ``catalog_reset()`` drops the cache (tests, settings changes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from django.conf import settings
from jsonschema import Draft202012Validator

from kernel.errors import NotFound
from kernel.schemas import schema_problem, schema_validator
from records.codes import RecordError

READ_POLICIES = ("all", "group", "owner")

# Columns no write may set: the engine and the sources own them.
SYSTEM_PROTECTED = frozenset(
    {
        "pg_row_id",
        "external_id",
        "sync_state",
        "sync_version",
        "synced_at",
        "owner",
        "group",
        "source_system",
        "record_type",
        "idempotency_key",
        "created_at",
        "updated_at",
    }
)


class RecordTypeNotFound(NotFound):
    """No record type of that name is in the catalog."""

    error = RecordError.RECORD_TYPE_NOT_FOUND


@dataclass(frozen=True)
class RecordType:
    name: str
    source: str | None = None
    is_transaction: bool = False
    required: tuple[str, ...] = ()
    source_required: tuple[str, ...] = ()
    protected: frozenset[str] = field(default_factory=frozenset)
    read_policy: str = "all"
    write_policy: str = "all"
    write_groups: tuple[str, ...] = ()
    id_prefix: str = "REC"
    # Declared columns of ``parent`` and of each line: name → its JSON Schema, compiled. ``None``
    # (a catalog entry without "fields") keeps the type open; the shipped catalog declares all.
    fields: Mapping[str, Draft202012Validator] | None = field(
        default=None, hash=False, compare=False
    )
    line_fields: Mapping[str, Draft202012Validator] | None = field(
        default=None, hash=False, compare=False
    )

    @property
    def is_connected(self) -> bool:
        return self.source is not None

    def is_protected(self, name: str) -> bool:
        return name in SYSTEM_PROTECTED or name in self.protected


@dataclass(frozen=True)
class Catalog:
    types: dict[str, RecordType]
    sources: dict[str, dict]

    def get(self, name: str) -> RecordType:
        try:
            return self.types[name]
        except KeyError:
            raise RecordTypeNotFound(
                f"record type {name!r} is not in the catalog", id=name
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self.types


def _record_type(name: str, raw: dict) -> RecordType:
    read = raw.get("read", "all")
    if read not in READ_POLICIES:
        raise ValueError(f"catalog: {name}.read must be one of {READ_POLICIES}, not {read!r}")
    write = raw.get("write", read)
    if write not in READ_POLICIES:
        raise ValueError(f"catalog: {name}.write must be one of {READ_POLICIES}, not {write!r}")
    return RecordType(
        name=name,
        source=raw.get("source"),
        is_transaction=bool(raw.get("transaction", False)),
        required=tuple(raw.get("required", ())),
        source_required=tuple(raw.get("sourceRequired", ())),
        protected=frozenset(raw.get("protected", ())),
        read_policy=read,
        write_policy=write,
        write_groups=tuple(raw.get("writeGroups", ())),
        id_prefix=raw.get("idPrefix", name[:3].upper()),
        fields=_declared(name, "fields", raw.get("fields")),
        line_fields=_declared(name, "lineFields", raw.get("lineFields")),
    )


def _declared(type_name: str, key: str, raw: Any) -> Mapping[str, Draft202012Validator] | None:
    """A type's declared columns, each a JSON Schema checked here so a bad catalog fails at load."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError(
            f"catalog: {type_name}.{key} must be an object of field name → JSON Schema"
        )
    for field_name, schema in raw.items():
        problem = schema_problem(schema)
        if problem is not None:
            where = problem.at(f"{type_name}.{key}.{field_name}")
            raise ValueError(f"catalog: {where}: {problem.message}")
    return MappingProxyType({name: schema_validator(schema) for name, schema in raw.items()})


@lru_cache(maxsize=1)
def catalog_load() -> Catalog:
    """The catalog this process serves."""
    raw = json.loads(Path(settings.TURBOBASE_CATALOG).read_text())
    types = {name: _record_type(name, spec) for name, spec in raw.get("types", {}).items()}
    sources = raw.get("sources", {})
    for rt in types.values():
        if rt.source is not None and rt.source not in sources:
            raise ValueError(f"catalog: {rt.name}.source names unknown source {rt.source!r}")
    return Catalog(types=types, sources=sources)


def catalog_reset() -> None:
    catalog_load.cache_clear()


def record_type_get(name: str) -> RecordType:
    """The catalog entry for ``name``, or 404 ``record_type_not_found``."""
    return catalog_load().get(name)
