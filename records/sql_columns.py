"""A model field's database column, and a long list of values to filter it by, for the records
room's hand-built statements."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.db import connection, models
from django.db.models.expressions import RawSQL


def column_name(model: type[models.Model], name: str) -> str:
    """The column of ``model``'s field ``name`` (a foreign key's ``…_id``)."""
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return str(field.column)


def values_among(values: Sequence[str], db_type: str = "text") -> Any:
    """``values`` (text, each read as ``db_type``) for a ``field__in=`` filter. On PostgreSQL one
    JSON parameter the database unpacks: a batch's list of hundreds is otherwise hundreds of
    parameters, each prepared by the field and bound by the driver in Python. Elsewhere, the
    list itself."""
    if connection.vendor != "postgresql":
        return list(values)
    return RawSQL(
        f"SELECT jsonb_array_elements_text(%s::jsonb)::{db_type}", (json.dumps(list(values)),)
    )
