"""Declared fields: a write's ``parent`` and ``lines`` checked against the record type's columns.

The catalog declares each type's columns as JSON Schemas (``fields``, and ``lineFields`` for the
lines of a transaction), as the seed's records have columns. A write naming a column the type
does not have, or a value its schema refuses, is refused 422 naming ``parent.<field>`` or
``lines[<i>].<field>``, before anything is written; the PostgREST read refuses the same names
(``records.rest.resources``). ``null`` is always a valid value: it clears a column. A type the
catalog leaves without ``fields`` stays open (a catalog of one's own may do that on purpose).

The catalog compiles one validator per declared column when it loads, so a write pays a dict
lookup and a small schema check per field it names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator

from kernel.schemas import schema_errors
from records.catalog import RecordType
from records.errors import FieldTypeInvalid, FieldUndeclared


def _check(
    declared: Mapping[str, Draft202012Validator],
    values: Mapping[str, Any],
    *,
    type_name: str,
    at: str,
) -> None:
    for name, value in values.items():
        validator = declared.get(name)
        if validator is None:
            known = ", ".join(sorted(declared)) or "none"
            raise FieldUndeclared(
                f"{name!r} is not a field of {type_name} (its fields: {known})",
                field=f"{at}.{name}",
            )
        if value is None:
            continue
        # The catalog's schemas passed ``schema_problem`` at load: nothing here fetches or recurses.
        errors = schema_errors(validator, value, first_only=True)
        if errors:
            raise FieldTypeInvalid(f"{at}.{name}: {errors[0].message}", field=f"{at}.{name}")


def fields_check(
    rt: RecordType, parent: Mapping[str, Any], lines: list[Mapping[str, Any]] | None
) -> None:
    """Refuse a payload naming an undeclared column or a value of the wrong type (422, by name)."""
    if rt.fields is not None:
        _check(rt.fields, parent, type_name=rt.name, at="parent")
    if rt.line_fields is not None:
        for index, line in enumerate(lines or ()):
            _check(rt.line_fields, line, type_name=f"{rt.name} lines", at=f"lines[{index}]")
