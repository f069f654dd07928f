"""A read bounded by PostgreSQL's ``statement_timeout`` in one round trip: ``ctx.query``'s read.

``SET LOCAL statement_timeout = n; SELECT …`` goes as one query string. PostgreSQL runs the
statements of one query string as one implicit transaction, so the bound holds for the SELECT and
ends with it: no ``BEGIN``, no ``SET`` of its own, no ``COMMIT``, no server-side cursor (``DECLARE``,
``FETCH``, ``CLOSE``). The SELECT asks for one row more than a chunk (``CHUNK_SIZE``); an answer
that short is the whole answer. A longer one is read again streamed — a transaction, the bound set
in it, a server-side cursor fetched a chunk at a time — so no more than a chunk is ever held before
the byte ceiling is measured, as ``rows_stream`` does for ``GET /v1/rest``.

Only outside a transaction (a lane worker, autocommit): inside one, the caller bounds the read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User
from django.db import connections, transaction

from records.rest.execute import CHUNK_SIZE, read_plan, rows_stream
from records.rest.parser import query_parse
from records.rest.rows import rows_encoded


def rest_read_timed(
    *, user: User, path_and_query: str, max_bytes: int, timeout_ms: int
) -> list[dict[str, Any]]:
    """``rest_read`` on PostgreSQL in autocommit, abandoned past ``timeout_ms`` (the database
    cancels it: ``QueryCanceled``); raises what ``rest_read`` raises."""
    query = query_parse(path_and_query)
    plan = read_plan(user=user, query=query, max_bytes=max_bytes)
    head = plan.rows[: CHUNK_SIZE + 1]
    connection = connections[head.db]
    # Django's public instrumentation hook puts the bound in front of the ORM's own SELECT; a
    # filter no row can match (``in.()``) sends nothing, as it would untimed.
    with connection.execute_wrapper(_bounded(timeout_ms)):
        fetched = list(head)
    if len(fetched) > CHUNK_SIZE:
        with transaction.atomic(using=head.db):
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL statement_timeout = %s", [int(timeout_ms)])
            return [row for row, _ in rows_stream(user=user, query=query, max_bytes=max_bytes)]
    return [row for row, _ in rows_encoded(plan, fetched)]


def _bounded(timeout_ms: int) -> Callable[..., Any]:
    """An ``execute_wrapper`` sending ``SET LOCAL statement_timeout`` and the statement as one
    query string, then moving the cursor past the SET's result to the statement's."""

    def wrapper(
        execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict
    ) -> Any:
        # The timeout is an int we made, never the author's text; the statement is the ORM's.
        result = execute(
            f"SET LOCAL statement_timeout = {int(timeout_ms)}; {sql}", params, many, context
        )
        context["cursor"].nextset()
        return result

    return wrapper
