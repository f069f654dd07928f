"""What a process author's types are made of: the catalog's record types and the deployed processes.

``turbobase ext types`` (through ``GET /v1/processes/types``) and the deploy's type check both read
their declarations here; ``extensions.declarations`` writes the TypeScript. A process's ``ctx.row``
is its ``eachRow.outstanding`` select, read from its source: the query is a function of the input,
so the select is taken from the query string literal the function returns (``table?select=a,b``);
a column of a record type's table takes that field's type, any other column reads as ``any``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from extensions.declarations import ProcessShape, RecordTypeShape, declarations_text
from extensions.models import ExtensionKind, ExtensionModule, ExtensionStatus, ExtensionVersion
from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from records.catalog import SYSTEM_PROTECTED, Catalog, RecordType, catalog_load

# The first query literal after ``outstanding``: its table and its query string.
_OUTSTANDING = re.compile(
    r"outstanding[\s\S]{0,600}?['\"`]([A-Za-z_][A-Za-z0-9_.]*)\?([^'\"`]*)['\"`]"
)


def _schemas(validators: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if validators is None else {n: v.schema for n, v in validators.items()}


def record_shape(record_type: RecordType) -> RecordTypeShape:
    return RecordTypeShape(
        name=record_type.name,
        fields=_schemas(record_type.fields),
        line_fields=_schemas(record_type.line_fields),
        required=record_type.required,
        protected=tuple(sorted(SYSTEM_PROTECTED | record_type.protected)),
    )


def _select_columns(query: str) -> list[str] | None:
    """The columns of a PostgREST query string's ``select`` (``None``: every column)."""
    select = next((p[7:] for p in query.split("&") if p.startswith("select=")), "*")
    columns = []
    for item in select.split(","):
        item = item.strip()
        if item == "*" or not item:
            return None
        if "(" in item:  # an embedded resource: not a column of this row's shape
            continue
        named = item.split("::")[0]  # a cast does not rename
        alias, is_aliased, _ = named.partition(":")
        columns.append(alias if is_aliased else named.split("->")[0])
    return columns


def row_shape(source: str, catalog: Catalog) -> tuple[dict[str, Any] | None, bool]:
    """``ctx.row``'s columns (name → JSON Schema, ``{}`` when unknown) and whether it is open."""
    found = _OUTSTANDING.search(source)
    if "eachRow" not in source or found is None:
        return (None, False) if "eachRow" not in source else ({}, True)
    table, query = found.groups()
    record_type = catalog.types.get(table)
    declared = _schemas(record_type.fields) if record_type else None
    columns = _select_columns(query)
    if columns is None:
        return {}, True
    return {c: (declared or {}).get(c, {}) for c in columns}, False


def process_shape(module_id: str, definition: Any, source: str, catalog: Catalog) -> ProcessShape:
    input_schema = definition.get("input") if isinstance(definition, dict) else None
    row, is_open = row_shape(source, catalog)
    return ProcessShape(id=module_id, input=input_schema, row=row, row_is_open=is_open)


def _deployed(catalog: Catalog) -> Iterable[ProcessShape]:
    modules = ExtensionModule.objects.filter(
        kind=ExtensionKind.PROCESS, status=ExtensionStatus.ACTIVE
    ).order_by("id")
    served = {
        (v.module_id, v.version): v
        for v in ExtensionVersion.objects.filter(module__in=modules).only(
            "module_id", "version", "entry", "source"
        )
    }
    for module in modules:
        version = served.get((module.id, module.version))
        source = version.source.get(version.entry, "") if version else ""
        yield process_shape(module.id, module.definition, source, catalog)


def authoring_declarations(*, origin: str, extra: ProcessShape | None = None) -> str:
    """The declarations file: every catalog type and every deployed process (``extra`` in place
    of the deployed version of its id, for a deploy's check)."""
    catalog = catalog_load()
    processes = [p for p in _deployed(catalog) if extra is None or p.id != extra.id]
    if extra is not None:
        processes = sorted([*processes, extra], key=lambda p: p.id)
    shapes = [record_shape(t) for _, t in sorted(catalog.types.items())]
    return declarations_text(shapes, processes, origin=origin)


def deploy_declarations(definition: Any, sources: Mapping[str, str], entry: str) -> str | None:
    """The deploy's type check (``extensions.kinds.typecheck_register``): the declarations with
    this process in them, or ``None`` when ``extensions.deploy_typecheck`` is off."""
    if not setting_get(SettingKey.EXTENSIONS_DEPLOY_TYPECHECK):
        return None
    module_id = definition.get("id") if isinstance(definition, dict) else None
    shape = process_shape(str(module_id), definition, sources.get(entry, ""), catalog_load())
    return authoring_declarations(origin="this instance", extra=shape)
