"""``/v1/processes``: invoke, watch, steer. Thin views over the processes services.

Who may act: a signed-in session, or a bearer token carrying ``extensions:deploy`` (its
``required_scopes``) whose owner is an administrator (``invoke_access_check``). That bar guards
every verb that makes a run do something (invoke, cancel, roll back, resume): a token acts as its
owner, and a run's writes are made as a person. Reads need ``data:read`` on a token and are scoped
by ``runs_visible``.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError
from django.http import QueryDict
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from extensions.models import ExtensionModule
from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from kernel.filters import filter_parameters
from kernel.models import AccessToken
from kernel.openapi import error_responses
from kernel.scopes import DATA_READ, EXTENSIONS_DEPLOY
from kernel.users import acting_user
from processes import serializers as out
from processes import steering_answers as steer_out
from processes.api.filters import ProcessRunsFilter, RunFilter
from processes.api.reads import (
    RUNS_PAGE,
    RUNS_PAGE_MAX,
    process_runs_page,
    processes_list,
    queue_read,
    run_ledger,
)
from processes.catalog import process_module_get
from processes.errors import InvokeForbidden
from processes.invoke import mode_parse, run_invoke
from processes.invoke_keys import invoke_key_read, invoke_replayed
from processes.models import ProcessRun, RunMode
from processes.steering import (
    process_cancel_queued,
    run_cancel,
    run_get,
    run_redirect,
    run_resume,
    run_retry,
    run_rollback,
)
from processes.sync_run import sync_invoke

# Steering a run: it may be missing, not yours, or in a state that does not allow the verb.
STEERING_ERRORS = error_responses(401, 403, 404, 409)
INVOKE_KEY = OpenApiParameter(
    "Idempotency-Key",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "The caller's key for this invoke: a retry with the same key, process, mode and input "
        "answers the first run (200, replayed: true); with another input it is 409 "
        "idempotency_key_reused."
    ),
)
INVOKE_MODE = OpenApiParameter(
    "mode",
    str,
    enum=RunMode.values,
    description=(
        "sync: wait for the run to settle, within the instance's synchronous budget "
        "(processes.sync_budget_ms)."
    ),
)
INVOKE_ACCEPTED = PolymorphicProxySerializer(
    component_name="InvokeAccepted",
    resource_type_field_name=None,
    serializers=[out.RunQueuedOut, out.SyncBudgetExceededOut],
)
INVOKE_RESPONSES = {
    202: OpenApiResponse(
        INVOKE_ACCEPTED,
        description=(
            "Queued; with ?mode=sync, the run did not settle within the budget and goes on."
        ),
    ),
    200: OpenApiResponse(out.RunSettledOut, description="?mode=sync: the run settled."),
    **error_responses(400, 401, 403, 404, 409),
}


def invoke_access_check(request: Request) -> None:
    """A token drives processes only when its owner is an administrator (403 ``admin_required``).

    Its ``extensions:deploy`` scope is checked before this, with every view's declared scopes.
    """
    token = request.auth
    if not isinstance(token, AccessToken):
        return  # a session: the person themself
    if not request.user.is_staff:
        raise InvokeForbidden(
            "a personal access token may drive processes only when it carries extensions:deploy "
            "and its owner is an administrator"
        )


def request_input(request: Request) -> Any:
    """The body is the input, bare. No body at all reads as an empty object."""
    data = request.data
    if isinstance(data, QueryDict):
        return data.dict()
    return data


class ProcessListView(APIView):
    """Every deployed process: its trigger, whether it is on, and your last five runs."""

    required_scopes = {"get": DATA_READ}

    @extend_schema(responses={200: out.ProcessListOut, **error_responses(401)})
    def get(self, request: Request) -> Response:
        body = []
        for listing in processes_list(user=acting_user(request)):
            body.append(
                {
                    "id": listing.id,
                    "description": listing.description,
                    "trigger": listing.trigger,
                    "triggers": listing.triggers,
                    "enabled": listing.is_enabled,
                    "disabledReason": listing.disabled_reason,
                    "isMigration": listing.is_migration,
                    "version": listing.version,
                    "lastRuns": [
                        out.run_brief(run, listing.failures.get(run.pk))
                        for run in listing.last_runs
                    ],
                }
            )
        return Response({"processes": body})


class ProcessInvokeView(APIView):
    """``POST /v1/processes/:id``: the body is the input. 202 queued; ``?mode=sync`` waits."""

    required_scopes = {"post": EXTENSIONS_DEPLOY}

    @extend_schema(
        request={"application/json": out.INVOKE_INPUT},
        parameters=[INVOKE_MODE, INVOKE_KEY],
        responses=INVOKE_RESPONSES,
    )
    def post(self, request: Request, process_id: str) -> Response:
        invoke_access_check(request)
        # 404 before the mode is read: no such process is the news. Read once, passed on.
        module = process_module_get(process_id)
        mode = mode_parse(request.query_params.get("mode"))
        body, user = request_input(request), acting_user(request)
        key = invoke_key_read(request.headers, user)
        asked = {"key": key, "process_id": process_id, "mode": mode, "body": body}
        first = invoke_replayed(**asked) if key else None
        if first is not None:
            return _replayed(first)
        try:
            return self._invoke(process_id, body, user, mode, module, key)
        except IntegrityError:
            # A concurrent invoke with the key committed its run first: this one answers it.
            first = invoke_replayed(**asked) if key else None
            if first is None:
                raise
            return _replayed(first)

    def _invoke(
        self,
        process_id: str,
        body: Any,
        user: User,
        mode: str,
        module: ExtensionModule,
        key: str | None,
    ) -> Response:
        if mode != RunMode.SYNC:
            run = run_invoke(
                process_id=process_id,
                body=body,
                user=user,
                mode=mode,
                module=module,
                idempotency_key=key,
            )
            return Response(out.run_queued(run), status=202)
        budget_ms = setting_get(SettingKey.PROCESSES_SYNC_BUDGET_MS)
        run, settled = sync_invoke(
            process_id=process_id,
            body=body,
            user=user,
            budget_ms=budget_ms,
            module=module,
            idempotency_key=key,
        )
        if settled is None:
            return Response(out.sync_budget_exceeded(run, budget_ms), status=202)
        return Response(out.run_settled(settled, run_ledger(settled)), status=200)


def _replayed(run: ProcessRun) -> Response:
    """A retried invoke's 200: the first run as it stands — settled, with its steps; or still
    going, as its ticket — and ``replayed``."""
    if run.is_terminal:
        return Response({**out.run_settled(run, run_ledger(run)), "replayed": True})
    return Response({**out.run_queued(run), "replayed": True})


class ProcessCancelView(APIView):
    """``POST /v1/processes/:id/cancel``: every queued run of the process you may see → ``{cancelled}``."""

    required_scopes = {"post": EXTENSIONS_DEPLOY}

    @extend_schema(
        request=None, responses={200: steer_out.CancelledOut, **error_responses(401, 403)}
    )
    def post(self, request: Request, process_id: str) -> Response:
        invoke_access_check(request)
        return Response(
            {"cancelled": process_cancel_queued(user=acting_user(request), process_id=process_id)}
        )


# A keyset page of runs: its size and where it starts (``processes.api.reads.runs_paged``).
PAGE_PARAMETERS = [
    OpenApiParameter(
        "limit", int, description=f"Runs per page, 1 to {RUNS_PAGE_MAX} (default {RUNS_PAGE})."
    ),
    OpenApiParameter(
        "cursor", str, description="The previous page's next; absent for the first page."
    ),
]


class ProcessRunsView(APIView):
    """``GET /v1/processes/:id/runs``: the process's runs you can see, newest first, a keyset page
    at a time — ``next`` is the ``cursor`` of the following page, null on the last."""

    required_scopes = {"get": DATA_READ}

    @extend_schema(
        parameters=[*PAGE_PARAMETERS, *filter_parameters(ProcessRunsFilter)],
        responses={200: out.RunsPageOut, **error_responses(400, 401)},
        operation_id="processes_runs_list",
    )
    def get(self, request: Request, process_id: str) -> Response:
        page = process_runs_page(
            user=acting_user(request), process_id=process_id, params=request.query_params
        )
        return Response(
            {
                "runs": [out.run_brief(run, page.failures.get(run.pk)) for run in page.runs],
                "next": page.next,
            }
        )


class RunDetailView(APIView):
    """``GET /v1/processes/runs/:runId``: the run and its ledger, in sequence."""

    required_scopes = {"get": DATA_READ}

    @extend_schema(responses={200: out.RunDetailOut, **error_responses(401, 404)})
    def get(self, request: Request, run_id: str) -> Response:
        run = run_get(user=acting_user(request), run_id=run_id)
        return Response(out.run_with_steps(run, run_ledger(run)))


class RunCancelView(APIView):
    required_scopes = {"post": EXTENSIONS_DEPLOY}

    @extend_schema(request=None, responses={200: steer_out.SteeringOut, **STEERING_ERRORS})
    def post(self, request: Request, run_id: str) -> Response:
        invoke_access_check(request)
        return Response(
            steer_out.cancel_answer(run_cancel(user=acting_user(request), run_id=run_id))
        )


class RunRollbackView(APIView):
    """202 queued; 200 ``queued: false`` when already rolled back; 409 while queued or running."""

    required_scopes = {"post": EXTENSIONS_DEPLOY}

    @extend_schema(
        request=None,
        responses={
            202: OpenApiResponse(
                steer_out.SteeringOut, description="The rollback is queued (queued: true)."
            ),
            200: OpenApiResponse(
                steer_out.SteeringOut, description="Already rolled back (queued: false)."
            ),
            **STEERING_ERRORS,
        },
    )
    def post(self, request: Request, run_id: str) -> Response:
        invoke_access_check(request)
        run, is_queued = run_rollback(user=acting_user(request), run_id=run_id)
        return Response(
            steer_out.steering_answer(run, is_queued=is_queued), status=202 if is_queued else 200
        )


class RunResumeView(APIView):
    """202 queued; 409 ``process_run_not_resumable`` naming the state, or ``process_is_a_migration``."""

    required_scopes = {"post": EXTENSIONS_DEPLOY}

    @extend_schema(
        request=None,
        responses={
            202: OpenApiResponse(steer_out.SteeringOut, description="The continuation is queued."),
            **STEERING_ERRORS,
        },
    )
    def post(self, request: Request, run_id: str) -> Response:
        invoke_access_check(request)
        run = run_resume(user=acting_user(request), run_id=run_id)
        return Response(steer_out.steering_answer(run, is_queued=True), status=202)


class RunRetryView(APIView):
    """202 ``{runId, retryOf}``: a new run, same process and input; 409 ``process_run_not_retryable``
    unless the run ended failed, cancelled, rolled_back or refused."""

    required_scopes = {"post": EXTENSIONS_DEPLOY}

    @extend_schema(
        request=None,
        responses={202: steer_out.RetryOut, **error_responses(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, run_id: str) -> Response:
        invoke_access_check(request)
        return Response(
            steer_out.retry_answer(run_retry(user=acting_user(request), run_id=run_id)), status=202
        )


class RunRedirectView(APIView):
    """The body is the new run's input, bare (checked as an invoke's: 400 ``invalid_input``, nothing
    changed). 202 ``{runId, redirectOf}``; the old run is cancelled unless it had ended."""

    required_scopes = {"post": EXTENSIONS_DEPLOY}

    @extend_schema(
        request={"application/json": out.INVOKE_INPUT},
        responses={202: steer_out.RedirectOut, **error_responses(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, run_id: str) -> Response:
        invoke_access_check(request)
        new = run_redirect(user=acting_user(request), run_id=run_id, body=request_input(request))
        return Response(steer_out.retry_answer(new), status=202)


class QueueView(APIView):
    """``GET /v1/processes/queue[?mode=async]``: the newest runs and all seven state counts."""

    required_scopes = {"get": DATA_READ}

    @extend_schema(
        parameters=[
            OpenApiParameter("mode", str, enum=RunMode.values, description="One lane only."),
            *filter_parameters(RunFilter),
        ],
        responses={200: out.QueueOut, **error_responses(400, 401)},
    )
    def get(self, request: Request) -> Response:
        raw_mode = request.query_params.get("mode")
        mode = mode_parse(raw_mode) if raw_mode else None
        read = queue_read(user=acting_user(request), mode=mode, params=request.query_params)
        return Response(
            {
                "runs": [out.run_summary(run, read.failures.get(run.pk)) for run in read.runs],
                "counts": read.counts,
                # The list is bounded; the counts cover every state of the runs asked for.
                "truncated": read.is_truncated,
            }
        )
