"""``/v1/extensions``: deploy, list, remove and lint extensions — thin views over the services."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import permissions
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from extensions.bundle import bundle_apply, bundle_plan
from extensions.deploy import extension_deploy, extension_lint, extension_remove
from extensions.errors import DeployForbidden, ExtensionInvalid
from extensions.serializers import (
    BundleAppliedOut,
    BundleIn,
    BundlePlanOut,
    BundleRequestIn,
    DeployedOut,
    ExtensionListOut,
    LintOut,
    RemovedOut,
)
from extensions.store import extensions_list
from kernel.openapi import error_responses
from kernel.permissions import ScopedAccess
from kernel.scopes import DATA_READ, EXTENSIONS_DEPLOY

# Every verb here needs a deployer; a body the sandbox or a validator refuses is a 400 or 422.
DEPLOY_ERRORS = error_responses(400, 401, 403, 422)


class ExtensionDeployer(permissions.BasePermission):
    """An administrator: their session, or their token (whose extensions:deploy scope
    ``ScopedAccess`` has checked first)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if not request.user.is_staff:
            raise DeployForbidden()
        return True


# Everything under /v1/extensions is the deploy surface. The list is also a read: `ext plan` reads
# it with the same deploy token it then applies with, and a data:read token may read it too.
DEPLOYER = [ScopedAccess, ExtensionDeployer]


def _first_error(errors: Any, path: str = "") -> tuple[str, str]:
    if isinstance(errors, dict):
        key, value = next(iter(errors.items()))
        name = key if key != "non_field_errors" else "body"
        return _first_error(value, f"{path}.{name}" if path else name)
    if isinstance(errors, list) and errors and not isinstance(errors[0], str):
        return _first_error(errors[0], path)
    return path or "body", str(errors[0]) if isinstance(errors, list) and errors else str(errors)


def _bundle_in(request: Request) -> tuple[str, dict[str, str]]:
    parsed = BundleIn(data=request.data)
    if not parsed.is_valid():
        field, message = _first_error(parsed.errors)
        raise ExtensionInvalid(f"{field}: {message}", field=field)
    return parsed.validated_data["entry"], dict(parsed.validated_data["files"])


class ExtensionListView(APIView):
    """Deploy one extension (POST), or list what is stored (GET)."""

    permission_classes = DEPLOYER
    required_scopes = {"get": (DATA_READ, EXTENSIONS_DEPLOY), "post": EXTENSIONS_DEPLOY}

    @extend_schema(responses={200: ExtensionListOut, **error_responses(401, 403)})
    def get(self, request: Request) -> Response:
        return Response({"extensions": extensions_list()})

    @extend_schema(request=BundleIn, responses={201: DeployedOut, **DEPLOY_ERRORS})
    def post(self, request: Request) -> Response:
        entry, files = _bundle_in(request)
        result = extension_deploy(entry=entry, files=files, by=request.user)
        return Response(
            {
                "id": result.id,
                "kind": result.kind,
                "version": result.version,
                "outcome": result.outcome,
                "status": result.status,
            },
            status=201,
        )


class ExtensionDetailView(APIView):
    """Remove one extension: it stops being served; its versions stay in the store."""

    permission_classes = DEPLOYER
    required_scopes = {"delete": EXTENSIONS_DEPLOY}

    @extend_schema(request=None, responses={200: RemovedOut, **error_responses(401, 403, 404, 409)})
    def delete(self, request: Request, module_id: str) -> Response:
        module = extension_remove(module_id=module_id, by=request.user)
        return Response({"id": module.id, "kind": module.kind, "status": module.status})


class ExtensionLintView(APIView):
    """The id-literal check (and the fold, transpile and evaluation it needs), storing nothing."""

    permission_classes = DEPLOYER
    required_scopes = {"post": EXTENSIONS_DEPLOY}

    @extend_schema(request=BundleIn, responses={200: LintOut, **DEPLOY_ERRORS})
    def post(self, request: Request) -> Response:
        entry, files = _bundle_in(request)
        report = extension_lint(entry=entry, files=files)
        return Response(
            {
                "entry": report.entry,
                "kind": report.kind,
                "id": report.defined_id,
                "warnings": [w.as_dict() for w in report.warnings],
            }
        )


class ExtensionBundlePlanView(APIView):
    """``POST /v1/extensions/bundle/plan``: validate a whole project and say what would change.

    Body: ``{modules: [{entry, files}], schedules?: [...], removes?: [id]}`` (see ``extensions.bundle``).
    200 ``{modules: [{id, kind, entry, sha256, change: new|replaced|unchanged, deployedVersion}],
    removes: [{id, kind, alongside}], undeclared: [{id, kind, version}], schedules: [{name, change,
    process, cron, tz}]}``; any refusal is the single deploy's own, its field prefixed with where
    it is (``modules[1].id``, ``schedules[0].scheduleExpr``). Nothing is written.
    """

    permission_classes = DEPLOYER
    required_scopes = {"post": EXTENSIONS_DEPLOY}

    @extend_schema(
        request=BundleRequestIn,
        responses={200: BundlePlanOut, **DEPLOY_ERRORS, **error_responses(404)},
    )
    def post(self, request: Request) -> Response:
        return Response(bundle_plan(data=request.data, by=request.user).as_dict())


class ExtensionBundleApplyView(APIView):
    """``POST /v1/extensions/bundle/apply``: the same plan, applied in one transaction or not at all.

    200 ``{modules: [{id, kind, version, outcome: written|duplicate|unchanged, status}],
    removed: [{id, kind, status}], undeclared: [...], schedules: [{name, change, …}]}``.
    """

    permission_classes = DEPLOYER
    required_scopes = {"post": EXTENSIONS_DEPLOY}

    @extend_schema(
        request=BundleRequestIn,
        responses={200: BundleAppliedOut, **DEPLOY_ERRORS, **error_responses(404)},
    )
    def post(self, request: Request) -> Response:
        return Response(bundle_apply(data=request.data, by=request.user))
