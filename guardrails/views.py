"""``/v1/settings``: every instance setting, read and changed by administrators."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from guardrails.serializers import SETTINGS_PATCH, SettingsOut
from guardrails.settings import settings_list, settings_patch
from kernel.codes import KernelError
from kernel.errors import Forbidden
from kernel.openapi import error_responses
from kernel.scopes import DATA_READ, EXTENSIONS_DEPLOY


class SettingsForbidden(Forbidden):
    """Only an administrator reads and changes instance settings."""

    error = KernelError.FORBIDDEN


def _admin_check(request: Request) -> None:
    if not getattr(request.user, "is_staff", False):
        raise SettingsForbidden()


class SettingsView(APIView):
    """``GET`` lists every setting; ``PATCH {key: value | null}`` changes some (null: the default)."""

    # A read; an administrator's deploy token, which may change settings, may read them too.
    # Changing one is an administrator's operation, like a deploy.
    required_scopes = {"get": (DATA_READ, EXTENSIONS_DEPLOY), "patch": EXTENSIONS_DEPLOY}

    @extend_schema(responses={200: SettingsOut, **error_responses(401, 403)})
    def get(self, request: Request) -> Response:
        _admin_check(request)
        return Response({"settings": settings_list()})

    @extend_schema(
        request={"application/json": SETTINGS_PATCH},
        responses={200: SettingsOut, **error_responses(400, 401, 403)},
    )
    def patch(self, request: Request) -> Response:
        _admin_check(request)
        return Response({"settings": settings_patch(request.data, by=request.user)})
