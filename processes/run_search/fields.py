"""Which input fields a process makes searchable, checked at deploy, and the keys a run keeps.

A field is searchable when its property in the process's ``input`` schema (top level only) says
``"x-search": true``. Its type must be a scalar (string, integer, number, boolean): a search names
one value. A value is kept as text (``search_value``): strings as they are, numbers and booleans as
JSON writes them; a value longer than ``VALUE_MAX`` characters is kept as its SHA-256, and a search
for it is hashed the same way, so a long value is still found exactly.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

SEARCH = "x-search"
VALUE_MAX = 200
FIELD_MAX = 100
SCALARS = frozenset({"string", "integer", "number", "boolean"})


def searchable_fields(definition: dict[str, Any]) -> list[str]:
    """The process's searchable input fields, in the order its schema declares them."""
    schema = definition.get("input")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return []
    return [
        name
        for name, prop in properties.items()
        if isinstance(prop, dict) and prop.get(SEARCH) is True
    ]


def search_declaration_problem(schema: dict[str, Any]) -> tuple[str, str] | None:
    """``(field, message)`` for the first ``x-search`` the deploy must refuse, else None."""
    properties = schema.get("properties")
    for name, prop in properties.items() if isinstance(properties, dict) else ():
        if not isinstance(prop, dict) or SEARCH not in prop:
            continue
        where = f"input.properties.{name}.{SEARCH}"
        if not isinstance(prop[SEARCH], bool):
            return where, "must be true or false"
        if len(name) > FIELD_MAX:
            return where, f"a searchable field's name is at most {FIELD_MAX} characters"
        declared = prop.get("type")
        types = declared if isinstance(declared, list) else [declared]
        scalar = [kind for kind in types if kind != "null"]
        if prop[SEARCH] and (not scalar or not set(scalar) <= SCALARS):
            return where, (
                "only a field of type string, integer, number or boolean can be searched "
                "(declare its type)"
            )
    return None


def search_value(value: Any) -> str | None:
    """The text a search key holds for an input value; None for a value no search names."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = value
    elif isinstance(value, int | float):
        text = json.dumps(value)
    else:
        return None
    if len(text) > VALUE_MAX:
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return text
