"""Many rows of one model in one INSERT, where the rows differ in a few columns only.

A migration batch writes hundreds of records, trail rows and ledger rows that share most of their
columns. ``bulk_create`` builds a model instance per row and prepares every column of every row;
here every shared column is prepared once from a template instance and each differing column is
one array: on PostgreSQL ``INSERT … SELECT shared…, v.* FROM unnest(arrays…)``. Other databases
get ``bulk_create`` of instances copied from the template.

The model's own manager decides whether the write is allowed here (a door-guarded model's
refuses outside its door): ``rows_insert`` asks it with an empty ``bulk_create`` first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection, models


def _columns(model: type[models.Model]) -> list[models.Field]:
    """The columns an INSERT names: all but a primary key the database numbers."""
    return [
        field
        for field in model._meta.concrete_fields
        if not (field.primary_key and getattr(field, "db_returning", False))
    ]


def rows_insert(
    model: type[models.Model], template: models.Model, varying: dict[str, Sequence[Any]]
) -> None:
    """Insert one row per position of the ``varying`` lists (keyed by attribute name, e.g.
    ``pg_row_id``, ``run_id``); every other column takes ``template``'s value (defaults and
    ``auto_now`` included). Ids the database numbers are not read back."""
    model._default_manager.bulk_create([])  # the manager's own guard (records' door)
    counts = {len(values) for values in varying.values()}
    if len(counts) != 1:
        raise ValueError("every varying column needs one value per row")
    (count,) = counts
    if not count:
        return
    fields = _columns(model)
    unknown = set(varying) - {field.attname for field in fields}
    if unknown:
        raise ValueError(f"{model.__name__} has no column {sorted(unknown)}")
    if connection.vendor != "postgresql":
        shared = {
            f.attname: getattr(template, f.attname) for f in fields if f.attname not in varying
        }
        model._default_manager.bulk_create(
            model(**shared, **{name: values[i] for name, values in varying.items()})
            for i in range(count)
        )
        return
    quote = connection.ops.quote_name
    selected: list[str] = []
    shared_params: list[Any] = []
    arrays: list[str] = []
    array_params: list[Any] = []
    for field in fields:
        db_type = field.db_type(connection)
        if field.attname in varying:
            arrays.append(f"%s::{db_type}[]")
            array_params.append(
                [field.get_db_prep_save(v, connection) for v in varying[field.attname]]
            )
            selected.append(f"v.c{len(arrays)}")
        else:
            value = field.pre_save(template, add=True)
            selected.append(f"%s::{db_type}")
            shared_params.append(field.get_db_prep_save(value, connection))
    names = ", ".join(f"c{n}" for n in range(1, len(arrays) + 1))
    columns = ", ".join(quote(f.column or f.attname) for f in fields)
    sql = (
        f"INSERT INTO {quote(model._meta.db_table)} ({columns}) "
        f"SELECT {', '.join(selected)} FROM unnest({', '.join(arrays)}) AS v({names})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, shared_params + array_params)
