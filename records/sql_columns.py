"""A model field's database column, for the records room's hand-built statements."""

from __future__ import annotations

from django.db import models


def column_name(model: type[models.Model], name: str) -> str:
    """The column of ``model``'s field ``name`` (a foreign key's ``…_id``)."""
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return str(field.column)
