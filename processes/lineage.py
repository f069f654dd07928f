"""How a record's lineage (``records.lineage``) describes the runs that wrote it."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User

from kernel.ids import uuid_or_none
from processes.models import ProcessRun
from processes.steering import runs_visible

EXCERPT_CHARS = 200


def input_excerpt(body: Any) -> str:
    """The run's input as compact JSON, cut at ``EXCERPT_CHARS`` (an ellipsis says it was)."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def lineage_runs_describe(run_ids: list[str], user: User) -> dict[str, dict[str, Any]]:
    """Each known run's process and version; its input excerpt only if ``user`` may see the run
    (their own; an administrator every run) — else null, as the run itself is 404 to them."""
    ids = [parsed for run_id in run_ids if (parsed := uuid_or_none(run_id)) is not None]
    seen = set(runs_visible(user).filter(pk__in=ids).values_list("pk", flat=True))
    return {
        str(run_id): {
            "processId": process_id,
            "version": version,
            "inputExcerpt": input_excerpt(body) if run_id in seen else None,
        }
        for run_id, process_id, version, body in ProcessRun.objects.filter(pk__in=ids).values_list(
            "pk", "process_id", "module_version", "input"
        )
    }
