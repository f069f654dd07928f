"""``POST /v1/batch``: several PostgREST reads in one request, as the caller, each under a row cap.

The app's batch read that seed 000 compares ``ctx.query`` with. Each read is the same read
``/v1/rest`` performs (``records.rest.execute``: the caller's row-level security, the byte
ceiling), plus what ``ctx.query`` deliberately lacks: a row cap (``processes.batch_max_rows``).
A read that would answer more rows answers the first ``cap`` and says ``truncated: true``; it
fetches ``cap + 1`` to know. One read's refusal is that read's entry; the others still answer.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from django.contrib.auth.models import User

from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from kernel.errors import InvalidRequest, TurbobaseError
from records.codes import RecordError, RefusalCode
from records.rest.execute import rows_stream
from records.rest.parser import query_parse


class BatchInvalid(InvalidRequest):
    """The batch body is not ``{"reads": ["<resource>?<query>", …]}``."""

    error = RecordError.INVALID_BATCH
    code = RefusalCode.BATCH_INVALID


def batch_max_reads() -> int:
    return setting_get(SettingKey.BATCH_MAX_READS)


def batch_reads_parse(body: Any) -> list[str]:
    """The reads of a batch body, or 400 naming the field that is wrong."""
    if not isinstance(body, dict):
        raise BatchInvalid('the body must be a JSON object {"reads": [...]}', field="body")
    unknown = sorted(set(body) - {"reads"})
    if unknown:
        raise BatchInvalid(
            f"{unknown[0]!r} is not a batch field; send only reads", field=unknown[0]
        )
    reads = body.get("reads")
    if not isinstance(reads, list) or not reads:
        raise BatchInvalid(
            'reads must be a non-empty list of "<resource>?<query>" strings', field="reads"
        )
    if len(reads) > batch_max_reads():
        raise BatchInvalid(
            f"a batch holds at most {batch_max_reads()} reads, not {len(reads)}", field="reads"
        )
    for index, read in enumerate(reads):
        if not isinstance(read, str) or not read.strip():
            raise BatchInvalid(
                'each read is a "<resource>?<query>" string', field=f"reads[{index}]"
            )
    return reads


def read_capped(*, user: User, path_and_query: str, cap: int) -> dict[str, Any]:
    """One read: ``{rows, truncated}``; a read asking for fewer rows than the cap is never cut."""
    query = query_parse(path_and_query)
    fetch = cap + 1 if query.limit is None else min(query.limit, cap + 1)
    rows = [row for row, _ in rows_stream(user=user, query=dataclasses.replace(query, limit=fetch))]
    return {"rows": rows[:cap], "truncated": len(rows) > cap}


def batch_read(*, user: User, reads: list[str]) -> list[dict[str, Any]]:
    """Answer each read in order: ``{rows, truncated}`` or ``{error: {status, …its body}}``."""
    cap = setting_get(SettingKey.PROCESSES_BATCH_MAX_ROWS)
    results: list[dict[str, Any]] = []
    for read in reads:
        try:
            results.append(read_capped(user=user, path_and_query=read, cap=cap))
        except TurbobaseError as exc:
            results.append({"error": {"status": exc.http_status, **exc.body()}})
    return results
