"""SQL for one key of a JSON column, and PostgREST's like/ilike: one answer on both databases.

Why not Django's ``fields__<key>`` lookups: on SQLite ``JSON_EXTRACT`` turns ``true`` into ``1`` (so
``{"k": true}`` equals ``{"k": 1}``), keys that look like integers become array indexes, and there
is no portable way to ask for a key's JSON type. These expressions spell each case out:

- ``JsonKeyText``: the value as text, as PostgreSQL's ``->>`` gives it (``"a"`` → ``a``, ``1.5`` →
  ``1.5``, ``true`` → ``true``, JSON null or a missing key → SQL NULL). eq/neq/in/like compare this.
- ``JsonKeyNumber``: the value when it is a JSON number, else NULL — never a cast error on a row
  holding text. gt/gte/lt/lte compare this when the query's value parses as a number.
- ``JsonKeyType``: null / boolean / number / string / object / array (NULL if missing).
- ``JsonKeyOrder``: the JSON value itself for ORDER BY (numbers numerically, strings as text);
  JSON null sorts as SQL NULL. Mixed types in one key order differently on the two databases.

Only PostgreSQL and SQLite are served; another backend fails loudly at compile time.
"""

from __future__ import annotations

from typing import Any

from django.db import NotSupportedError
from django.db.models import F, FloatField, Func, JSONField, TextField
from django.db.models.lookups import Lookup


def _unsupported(connection) -> str:
    return f"the REST read runs on PostgreSQL and SQLite, not {connection.vendor}"


class _JsonKey(Func):
    """Base: one key of a JSON column. Subclasses give the SQL per vendor."""

    def __init__(self, field: str, key: str) -> None:
        super().__init__(F(field))
        self.key = key

    def _lhs(self, compiler, connection) -> tuple[str, list[Any]]:
        sql, params = compiler.compile(self.get_source_expressions()[0])
        return sql, list(params)

    def as_sql(self, compiler, connection, **extra):  # pragma: no cover - other backends
        raise NotSupportedError(_unsupported(connection))

    def _sqlite_path(self) -> str:
        # The key matched records.rest.parser.NAME, so it needs no escaping inside the quotes.
        return f'$."{self.key}"'


class JsonKeyText(_JsonKey):
    output_field = TextField()

    def as_postgresql(self, compiler, connection, **extra):
        lhs, params = self._lhs(compiler, connection)
        return f"({lhs} ->> (%s)::text)", [*params, self.key]

    def as_sqlite(self, compiler, connection, **extra):
        lhs, params = self._lhs(compiler, connection)
        path = self._sqlite_path()
        sql = (
            f"(CASE json_type({lhs}, %s) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' "
            f"ELSE CAST(json_extract({lhs}, %s) AS TEXT) END)"
        )
        return sql, [*params, path, *params, path]


class JsonKeyNumber(_JsonKey):
    output_field = FloatField()

    def as_postgresql(self, compiler, connection, **extra):
        lhs, params = self._lhs(compiler, connection)
        sql = (
            f"(CASE WHEN jsonb_typeof({lhs} -> (%s)::text) = 'number' "
            f"THEN ({lhs} ->> (%s)::text)::numeric END)"
        )
        return sql, [*params, self.key, *params, self.key]

    def as_sqlite(self, compiler, connection, **extra):
        lhs, params = self._lhs(compiler, connection)
        path = self._sqlite_path()
        sql = (
            f"(CASE WHEN json_type({lhs}, %s) IN ('integer', 'real') "
            f"THEN json_extract({lhs}, %s) END)"
        )
        return sql, [*params, path, *params, path]


class JsonKeyType(_JsonKey):
    output_field = TextField()

    def as_postgresql(self, compiler, connection, **extra):
        lhs, params = self._lhs(compiler, connection)
        return f"jsonb_typeof({lhs} -> (%s)::text)", [*params, self.key]

    def as_sqlite(self, compiler, connection, **extra):
        lhs, params = self._lhs(compiler, connection)
        path = self._sqlite_path()
        sql = (
            f"(CASE json_type({lhs}, %s) WHEN 'true' THEN 'boolean' WHEN 'false' THEN 'boolean' "
            f"WHEN 'integer' THEN 'number' WHEN 'real' THEN 'number' WHEN 'text' THEN 'string' "
            f"ELSE json_type({lhs}, %s) END)"
        )
        return sql, [*params, path, *params, path]


class JsonKeyOrder(_JsonKey):
    output_field = JSONField()

    def as_postgresql(self, compiler, connection, **extra):
        lhs, params = self._lhs(compiler, connection)
        return f"NULLIF({lhs} -> (%s)::text, 'null'::jsonb)", [*params, self.key]

    def as_sqlite(self, compiler, connection, **extra):
        lhs, params = self._lhs(compiler, connection)
        return f"json_extract({lhs}, %s)", [*params, self._sqlite_path()]


def _glob_from_like(pattern: str) -> str:
    """A LIKE pattern (``%``/``*`` any run, ``_`` one char, ``\\`` escapes) as an SQLite GLOB."""
    out: list[str] = []
    chars = iter(pattern)
    for char in chars:
        if char == "\\":
            char = next(chars, "\\")
            out.append(f"[{char}]" if char in "*?[" else char)
        elif char == "%":
            out.append("*")
        elif char == "_":
            out.append("?")
        elif char in "?[":
            out.append(f"[{char}]")
        else:
            out.append(char)
    return "".join(out)


class _PatternMatch(Lookup):
    """PostgREST ``like``/``ilike``: ``*`` is the wildcard (``%`` and ``_`` keep their meaning)."""

    prepare_rhs = False
    is_case_sensitive = True

    def as_sql(self, compiler, connection):
        lhs, lhs_params = compiler.compile(self.lhs)
        pattern = str(self.rhs).replace("*", "%")
        if connection.vendor == "postgresql":
            operator = "LIKE" if self.is_case_sensitive else "ILIKE"
            return f"{lhs} {operator} %s", [*lhs_params, pattern]
        if connection.vendor == "sqlite":
            # SQLite's LIKE ignores ASCII case and nothing else; GLOB is its case-sensitive match.
            if self.is_case_sensitive:
                return f"{lhs} GLOB %s", [*lhs_params, _glob_from_like(pattern)]
            return f"{lhs} LIKE %s ESCAPE '\\'", [*lhs_params, pattern]
        raise NotSupportedError(_unsupported(connection))


class Like(_PatternMatch):
    lookup_name = "rest_like"


class ILike(_PatternMatch):
    lookup_name = "rest_ilike"
    is_case_sensitive = False
