"""Many rows of one model in one INSERT, where the rows differ in a few columns only.

A migration batch writes hundreds of records, trail rows and ledger rows that share most of their
columns. ``bulk_create`` builds a model instance per row and prepares every column of every row;
here every shared column is prepared once from a template instance and the differing columns
travel as one JSON document: on PostgreSQL ``INSERT … SELECT shared…, v.* FROM
jsonb_to_recordset(%s)`` — one ``json.dumps`` (C) of the batch instead of an array parameter per
column, which psycopg escapes element by element in Python (~40 % of a migration batch's
client time). Other databases get ``bulk_create`` of instances copied from the template.

The model's own manager decides whether the write is allowed here (a door-guarded model's
refuses outside its door): ``rows_insert`` asks it with an empty ``bulk_create`` first.
"""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from collections.abc import Sequence
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, models

# Values a column takes as they are: their JSON text is what PostgreSQL's input of the column's
# type reads (a JSON column's value is stored as the JSON it is). Others are prepared by the field.
_PLAIN = (str, int, float, bool, type(None))


class _Encoder(DjangoJSONEncoder):
    """Django's encoder, but times keep their microseconds (it cuts them to milliseconds)."""

    def default(self, o: Any) -> Any:
        if isinstance(o, datetime.date | datetime.time):
            return o.isoformat()
        if isinstance(o, decimal.Decimal):
            return str(o)
        return super().default(o)


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
    typed: list[str] = []
    columns_of_rows: list[list[Any]] = []
    for field in fields:
        db_type = field.db_type(connection)
        if field.attname in varying:
            name = f"c{len(typed) + 1}"
            typed.append(f"{name} {db_type}")
            columns_of_rows.append(_json_ready(field, varying[field.attname]))
            selected.append(f"v.{name}")
        else:
            value = field.pre_save(template, add=True)
            selected.append(f"%s::{db_type}")
            shared_params.append(field.get_db_prep_save(value, connection))
    names = [f"c{n}" for n in range(1, len(typed) + 1)]
    document = json.dumps(
        [dict(zip(names, values, strict=True)) for values in zip(*columns_of_rows, strict=True)],
        cls=_Encoder,
        separators=(",", ":"),
    )
    columns = ", ".join(quote(f.column or f.attname) for f in fields)
    sql = (
        f"INSERT INTO {quote(model._meta.db_table)} ({columns}) "
        f"SELECT {', '.join(selected)} FROM jsonb_to_recordset(%s::jsonb) AS v({', '.join(typed)})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*shared_params, document])


def _json_ready(field: models.Field, values: Sequence[Any]) -> list[Any]:
    """One column's values for the JSON document: a JSON column's as they are (a ``null`` is
    stored as SQL NULL, as the field stores ``None``), plain values as they are, others as the
    field prepares them for the database."""
    if isinstance(field, models.JSONField):
        if field.encoder is not None:  # its own encoding, then stored as that JSON
            return [json.loads(json.dumps(v, cls=field.encoder)) for v in values]
        return list(values)
    return [
        v
        if isinstance(v, _PLAIN)
        else str(v)
        if isinstance(v, uuid.UUID)  # here, not in the encoder's slower fallback
        else field.get_db_prep_save(v, connection)
        for v in values
    ]


def rows_update(model: type[models.Model], rows: Sequence[models.Model], names: list[str]) -> None:
    """Write the ``names`` attributes of ``rows`` (saved instances) back, one UPDATE for all: on
    PostgreSQL ``UPDATE … FROM jsonb_to_recordset(%s)`` joined on the primary key (one JSON
    document, as ``rows_insert``); elsewhere ``bulk_update``, whose ``CASE`` per column and row
    costs PostgreSQL and Python far more for a migration batch's hundreds of rows."""
    manager = model._default_manager
    manager.bulk_update([], names)  # the manager's own guard (records' door)
    if not rows:
        return
    if connection.vendor != "postgresql":
        manager.bulk_update(rows, names)
        return
    quote = connection.ops.quote_name
    by_name = {field.attname: field for field in model._meta.concrete_fields}
    pk = model._meta.pk
    assert pk is not None
    fields = [pk, *(by_name[name] for name in names)]
    typed = [f"c{n} {field.db_type(connection)}" for n, field in enumerate(fields)]
    columns = [
        _json_ready(field, [getattr(row, field.attname) for row in rows]) for field in fields
    ]
    document = json.dumps(
        [
            {f"c{n}": value for n, value in enumerate(values)}
            for values in zip(*columns, strict=True)
        ],
        cls=_Encoder,
        separators=(",", ":"),
    )
    table = quote(model._meta.db_table)
    assignments = ", ".join(
        f"{quote(str(field.column))} = v.c{n}" for n, field in enumerate(fields) if n
    )
    sql = (
        f"UPDATE {table} SET {assignments} FROM jsonb_to_recordset(%s::jsonb) AS v({', '.join(typed)}) "
        f"WHERE {table}.{quote(str(pk.column))} = v.c0"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [document])
