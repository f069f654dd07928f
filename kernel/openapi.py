"""The kernel's share of the OpenAPI schema: how a caller signs in, and the one error body.

Every room's views describe their own bodies with serializers (``extend_schema``); what they all
have in common lives here so it is written once: the two ways in (``kernel.auth``) as security
schemes, the error body every refusal renders as (``kernel.errors.exception_handler``), and a
schema class that can document the body ``DELETE /v1/data/<recordType>`` carries.

The serializers here are descriptions only: bodies are rendered by ``TurbobaseError.body()``;
``tests/turbobase/test_openapi.py`` checks real answers against what is written here.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from kernel.scopes import ScopeRule, scope_alternatives


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """``Authorization: Bearer <token>``: a personal access token from ``tb_token``."""

    target_class = "kernel.auth.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A personal access token (`manage.py tb_token NAME --scope …`).",
        }


class CsrfSessionScheme(OpenApiAuthenticationExtension):
    """The session cookie ``POST /v1/auth/session`` sets; unsafe methods also send ``X-CSRFToken``."""

    target_class = "kernel.auth.CsrfSessionAuthentication"
    name = "cookieAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": settings.SESSION_COOKIE_NAME,
            "description": "The session from POST /v1/auth/session; unsafe methods send the "
            "answered csrfToken in the X-CSRFToken header.",
        }


class RejectionSerializer(serializers.Serializer):
    """Why a write or a request was refused: the refusing party's own code, field and message."""

    code = serializers.CharField(help_text="A refusal code, e.g. MANDATORY_FIELD_MISSING, INVALID.")
    field = serializers.CharField(allow_null=True, help_text="The field at fault, or null.")
    message = serializers.CharField()


class ErrorSerializer(serializers.Serializer):
    """Every error answer. A refusal carries ``rejection``; any other error carries ``message``.

    Some errors add facts of their own beside these (``runId``, ``state``, ``entry``…).
    """

    error = serializers.CharField(
        help_text="What went wrong, e.g. invalid_request, write_refused, "
        "not_found, forbidden, not_authenticated, conflict."
    )
    message = serializers.CharField(required=False)
    rejection = RejectionSerializer(required=False)


class OpenErrorBody(OpenApiSerializerExtension):
    """An error body may carry facts beside ``error`` (``runId``, ``state``, ``id``…): say so.

    A serializer cannot say "and other keys"; every other component lists its keys exactly.
    """

    target_class = ErrorSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        return {**schema, "additionalProperties": {}}


ERROR_MEANINGS = {
    400: "The request is malformed; rejection.field names the part at fault.",
    401: "No session and no bearer token, or an invalid one.",
    403: "Signed in, but not allowed to do this (or a token without the scope it needs: "
    "insufficient_scope, naming the scope).",
    404: "No such thing (or not one you may see).",
    409: "The state does not allow it now (the body names the state).",
    413: "The answer would be larger than the instance allows.",
    415: "The body is not JSON.",
    422: "The write was refused (write_refused: the rejection says by whom and why).",
    429: "A rolling-window cap would be exceeded; try again later.",
}


def error_responses(*statuses: int) -> dict[int, OpenApiResponse]:
    """``{status: the shared Error body}`` for ``extend_schema(responses=…)``."""
    return {
        status: OpenApiResponse(ErrorSerializer, description=ERROR_MEANINGS[status])
        for status in statuses
    }


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's schema, plus what our views declare rather than decorate.

    - A handler's ``required_scopes`` (``kernel.scopes``) is said in its description, and its
      401 and 403 answers are documented without every view listing them again.
    - ``DELETE /v1/data/<recordType>`` names its record in the body (the contract); the stock
      class documents bodies only for POST, PUT and PATCH.
    """

    def scope_rule(self) -> ScopeRule | None:
        declared = getattr(self.view, "required_scopes", None) or {}
        return declared.get(self.method.lower())

    def get_operation(self, *args: Any, **kwargs: Any) -> Any:
        operation = super().get_operation(*args, **kwargs)
        rule = self.scope_rule()
        if operation is None or rule is None:
            return operation
        needed = " or ".join(f"`{scope}`" for scope in scope_alternatives(rule))
        sentence = f"A personal access token needs the {needed} scope."
        operation["description"] = f"{operation.get('description', '')}\n\n{sentence}".strip()
        return operation

    def _get_response_bodies(self, direction: Any = "response") -> Any:
        # Not get_response_serializers: @extend_schema replaces that method, not this one.
        responses = super()._get_response_bodies(direction)
        if self.scope_rule() is not None:
            for status, answer in error_responses(401, 403).items():
                if str(status) not in responses:
                    responses[str(status)] = self._get_response_for_code(
                        answer, str(status), direction=direction
                    )
        return responses

    def _get_request_body(self, direction: str = "request") -> Any:
        if self.method != "DELETE" or self.get_request_serializer() is None:
            return super()._get_request_body(direction)
        self.method = "POST"  # the parent's guard is by method name only
        try:
            return super()._get_request_body(direction)
        finally:
            self.method = "DELETE"
