"""The declarations file (``turbobase-env.d.ts``) as text, from plain data — pure Python, no Django.

``processes.authoring_types`` gathers the data (the catalog's record types, the deployed processes'
input schemas and ``eachRow`` selects); this module only writes TypeScript. The file declares the
module ``@turbobase/extensions`` itself, so an editor and ``turbobase ext lint`` read the same
types: a typed ``defineProcess`` whose ``build`` returns a record type's writable fields (the
``…Write`` interfaces; protected fields are left out and listed in ``@readonlyFields``), whose
``ctx.input`` is the process's ``input`` schema and whose ``ctx.row`` is its ``outstanding`` select.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

JSON_TS = "Json"
# The SDK's shared types, typed by the generated maps (``RecordWrites``, ``ProcessTypes``).
_SDK_TS = Path(__file__).resolve().parent / "js" / "declarations_sdk.d.ts.txt"
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_PRIMITIVES = {
    "string": "string",
    "number": "number",
    "integer": "number",
    "boolean": "boolean",
    "null": "null",
}


@dataclass(frozen=True)
class RecordTypeShape:
    """A record type as the declarations need it: declared fields (``None``: open) and rules."""

    name: str
    fields: Mapping[str, Any] | None
    line_fields: Mapping[str, Any] | None = None
    required: Sequence[str] = ()
    protected: Sequence[str] = ()


@dataclass(frozen=True)
class ProcessShape:
    """A process as the declarations need it: its ``input`` schema and its row's columns."""

    id: str
    input: Any
    # Column → JSON Schema (``{}``: not known); None for a process without ``eachRow``.
    row: Mapping[str, Any] | None = None
    row_is_open: bool = False  # ``select=*``: any column


def _key(name: str) -> str:
    return name if _IDENTIFIER.fullmatch(name) else json.dumps(name)


def schema_ts(schema: Any, depth: int = 0, *, unknown: str = JSON_TS) -> str:
    """A JSON Schema as a TypeScript type; what the schema does not pin down reads as ``unknown``
    (``Json`` for a record's field; ``any`` for an input or a row, which the author narrows)."""
    if not isinstance(schema, dict) or depth > 8:
        return unknown
    if "const" in schema:
        return json.dumps(schema["const"])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return " | ".join(json.dumps(value) for value in schema["enum"])
    for keyword in ("anyOf", "oneOf"):
        if isinstance(schema.get(keyword), list) and schema[keyword]:
            return " | ".join(
                f"({schema_ts(s, depth + 1, unknown=unknown)})" for s in schema[keyword]
            )
    kind = schema.get("type")
    if isinstance(kind, list):
        return (
            " | ".join(schema_ts({**schema, "type": k}, depth + 1, unknown=unknown) for k in kind)
            or unknown
        )
    if kind in _PRIMITIVES:
        return _PRIMITIVES[kind]
    if kind == "array":
        return f"({schema_ts(schema.get('items'), depth + 1, unknown=unknown)})[]"
    if kind == "object" or isinstance(schema.get("properties"), dict):
        return _object_ts(schema, depth, unknown)
    return unknown


def _object_ts(schema: dict, depth: int, unknown: str) -> str:
    raw = schema.get("properties")
    properties: dict[str, Any] = raw if isinstance(raw, dict) else {}
    required = set(schema.get("required") or ())
    members = [
        f"{_key(name)}{'' if name in required else '?'}: {schema_ts(sub, depth + 1, unknown=unknown)}"
        for name, sub in sorted(properties.items())  # PostgreSQL's jsonb keeps no key order
    ]
    # Declared properties only, so a misspelt one is an error; an object that declares none is open.
    return "{ " + "; ".join(members) + " }" if members else f"{{ [key: string]: {unknown} }}"


def _required_member(name: str, schema: Any) -> str:
    """A required field: documented, not enforced here — a build without it is refused at write
    time, as ever (a hook may complete it, and a process may mean to fail there)."""
    return (
        f"  /** Required: a write without it is refused. */\n  {_key(name)}?: {schema_ts(schema)};"
    )


def _nullable(schema: Any) -> str:
    """An optional field's type: a build may also send null for it (no value)."""
    text = schema_ts(schema)
    return text if text == JSON_TS else f"{text} | null"


def _pascal(name: str) -> str:
    parts = re.split(r"[^A-Za-z0-9]+", name)
    return "".join(p[:1].upper() + p[1:] for p in parts if p) or "Record"


def _write_interface(name: str, shape: RecordTypeShape, fields: Mapping[str, Any] | None) -> str:
    protected = sorted(set(shape.protected))
    doc = [
        f"/** What a build may write to {shape.name}. Protected fields are not writable.",
        f" * @recordType {shape.name}",
        f" * @readonlyFields {' '.join(protected)}",
        " */",
    ]
    if fields is None:
        return "\n".join([*doc, f"export interface {name} {{ [field: string]: Json }}"])
    members = [
        _required_member(f, s) if f in shape.required else f"  {_key(f)}?: {_nullable(s)};"
        for f, s in fields.items()
        if f not in protected
    ]
    return "\n".join([*doc, f"export interface {name} {{", *members, "}"])


def _record_ts(shape: RecordTypeShape) -> list[str]:
    """A record type's write interfaces (create, update, line) and its read shape."""
    base = _pascal(shape.name)
    update = RecordTypeShape(shape.name, shape.fields, required=(), protected=shape.protected)
    fields = dict(shape.fields) if shape.fields is not None else None
    read = [f"  readonly {_key(f)}?: Json;" for f in sorted(set(shape.protected))]
    read += [
        f"  {_key(f)}{'' if f in shape.required else '?'}: {schema_ts(s)};"
        for f, s in (fields or {}).items()
    ]
    if fields is None:
        read.append("  [field: string]: Json | undefined;")
    return [
        _write_interface(f"{base}ParentWrite", shape, fields),
        _write_interface(f"{base}ChangesWrite", update, fields),
        _write_interface(f"{base}LineWrite", update, shape.line_fields),
        f"/** A {shape.name} as read: protected fields are readonly. */",
        f"export interface {base} {{",
        *read,
        "}",
    ]


def _writes_map(shapes: Sequence[RecordTypeShape]) -> list[str]:
    lines = ["export interface RecordWrites {"]
    for shape in shapes:
        base = _pascal(shape.name)
        lines.append(
            f"  {_key(shape.name)}: {{ create: {base}ParentWrite; update: {base}ChangesWrite; "
            f"line: {base}LineWrite; read: {base} }};"
        )
    return [*lines, "}"]


def _row_ts(process: ProcessShape) -> str:
    if process.row is None:
        return "undefined"
    members = [f"{_key(c)}: {schema_ts(s, unknown='any')}" for c, s in process.row.items()]
    if process.row_is_open or not members:
        members.append("[column: string]: any")
    return "{ " + "; ".join(members) + " }"


def _processes_map(processes: Sequence[ProcessShape]) -> list[str]:
    lines = ["export interface ProcessTypes {"]
    for process in processes:
        lines.append(
            f"  {json.dumps(process.id)}: {{ input: {schema_ts(process.input, unknown='any')}; "
            f"row: {_row_ts(process)} }};"
        )
    return [*lines, "}"]


def declarations_text(
    record_types: Sequence[RecordTypeShape], processes: Sequence[ProcessShape], *, origin: str
) -> str:
    """The whole ``turbobase-env.d.ts``: header, the SDK's shared types, the generated maps."""
    body: list[str] = []
    for shape in record_types:
        body += _record_ts(shape)
    body += _writes_map(record_types) + _processes_map(processes)
    indented = "\n".join(("  " + line) if line else "" for line in "\n".join(body).split("\n"))
    return "\n".join(
        [
            f"// Generated by `turbobase ext types` from {origin}: the record catalog and the",
            "// deployed processes. Do not edit; run `turbobase ext types` again after a change.",
            "declare module '@turbobase/extensions' {",
            indented,
            _SDK_TS.read_text(encoding="utf-8").rstrip(),
            "}",
            "declare module '@turbobase/extensions/process' {",
            "  export * from '@turbobase/extensions';",
            "}",
            "",
        ]
    )
