"""The process page's "Plan…": the input typed as JSON, the plan of a run shown as a table —
the same ``run_plan`` as ``POST /v1/processes/<id>/plan``; nothing is written."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from kernel.errors import TurbobaseError
from kernel.users import acting_user
from processes.dry_run import run_plan


def plan_view(admin_site: Any, opts: Any, request: HttpRequest, process_id: str) -> HttpResponse:
    """GET: the form; POST: the form again, with the plan (or the refusal) below it."""
    raw = request.POST.get("input", "{}") if request.method == "POST" else "{}"
    plan: dict[str, Any] | None = None
    error = ""
    if request.method == "POST":
        try:
            body = json.loads(raw)
        except ValueError as exc:
            error = f"the input is not JSON: {exc}"
        else:
            try:
                plan = run_plan(process_id=process_id, body=body, user=acting_user(request))
            except TurbobaseError as exc:
                field = getattr(exc, "field", None)
                error = f"{exc.error}: {exc.message}" + (f" ({field})" if field else "")
    context = {
        **admin_site.each_context(request),
        "opts": opts,
        "title": f"Plan a run of {process_id}",
        "process_id": process_id,
        "input": raw,
        "plan": plan,
        "fields": [_fields(step) for step in plan["steps"]] if plan else [],
        "error": error,
    }
    return TemplateResponse(request, "admin/processes/process/plan.html", context)


def _fields(step: dict[str, Any]) -> str:
    """A step's written fields as JSON, as the API answers them."""
    record = step["record"]
    return json.dumps(record["parent"], ensure_ascii=False, sort_keys=True) if record else "—"
