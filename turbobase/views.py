"""Session sign-in and health."""

from __future__ import annotations

from django.contrib.auth import authenticate, login, logout
from django.db import connection
from django.middleware.csrf import get_token
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import ensure_csrf_cookie
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import NotAuthenticated
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from kernel.errors import InvalidRequest, TurbobaseError
from kernel.models import AccessToken
from kernel.openapi import error_responses
from kernel.parsers import JSONParser
from kernel.sign_in import (
    client_address,
    sign_in_failure_record,
    sign_in_lock_check,
    sign_in_success_record,
)
from turbobase.codes import EdgeCode
from turbobase.serializers import HealthOut, SignedInOut, SignInIn, WhoAmIOut

USERNAME_MAX_LENGTH = 150  # Django's own limit: a longer name cannot be anyone's


class SignInFailed(TurbobaseError):
    """Wrong username or password."""

    error = EdgeCode.INVALID_CREDENTIALS
    http_status = 401


def credential_in(data: object, name: str) -> str:
    """One credential from the JSON body (whose text ``kernel.parsers`` has already checked)."""
    value = data.get(name) if isinstance(data, dict) else None
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"{name} is required", field=name)
    if name == "username" and len(value) > USERNAME_MAX_LENGTH:
        message = f"username is longer than {USERNAME_MAX_LENGTH} characters"
        raise InvalidRequest(message, field=name)
    return value


@method_decorator(ensure_csrf_cookie, name="dispatch")
class SessionView(APIView):
    """``POST`` signs in and answers the CSRF token; ``DELETE`` signs out; ``GET`` says who you are."""

    permission_classes = [AllowAny]
    scope_exempt = "signing in and out is what makes a session; GET answers any token its owner"
    # JSON only: a cross-site HTML form can post urlencoded or multipart bodies but never
    # application/json (that needs a CORS preflight), so no other site can sign a browser in.
    parser_classes = [JSONParser]

    @extend_schema(
        request=SignInIn, responses={200: SignedInOut, **error_responses(400, 401, 415, 429)}
    )
    def post(self, request: Request) -> Response:
        username = credential_in(request.data, "username")
        password = credential_in(request.data, "password")
        address = client_address(request._request)
        # Before the password: a locked name learns nothing.
        sign_in_lock_check(username=username, address=address)
        user = authenticate(request._request, username=username, password=password)
        if user is None:
            sign_in_failure_record(username=username, address=address)
            raise SignInFailed()
        sign_in_success_record(username=username, address=address)
        login(request._request, user)
        return Response(
            {
                "username": user.get_username(),
                "isAdmin": user.is_staff,
                "csrfToken": get_token(request._request),
            }
        )

    def get_authenticators(self):
        # Signing in (POST) cannot need a session or a CSRF token yet. Signing out (DELETE) is a
        # session's unsafe request like any other, so its CSRF token is checked; "who am I" (GET)
        # answers for a session or a bearer token alike, so the CLI's whoami works with a token.
        if getattr(self.request, "method", "GET") == "POST":  # no request: the schema generator
            return []
        return [auth() for auth in api_settings.DEFAULT_AUTHENTICATION_CLASSES]

    @extend_schema(responses={200: WhoAmIOut, **error_responses(401)})
    def get(self, request: Request) -> Response:
        if not request.user.is_authenticated:
            raise NotAuthenticated("no session and no bearer token")
        token = request.auth if isinstance(request.auth, AccessToken) else None
        body = {
            "username": request.user.get_username(),
            "isAdmin": request.user.is_staff,
            "via": "token" if token else "session",
        }
        if token:
            body["scopes"] = list(token.scopes)
        else:
            body["csrfToken"] = get_token(request._request)
        return Response(body)

    @extend_schema(
        request=None,
        responses={204: OpenApiResponse(description="Signed out."), **error_responses(403)},
    )
    def delete(self, request: Request) -> Response:
        logout(request._request)
        return Response(status=204)


class HealthView(APIView):
    """Liveness: answers without credentials, and touches the database so a dead one shows."""

    permission_classes = [AllowAny]
    scope_exempt = "liveness answers without credentials"
    authentication_classes = []

    @extend_schema(responses={200: HealthOut})
    def get(self, request: Request) -> Response:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return Response({"status": "ok", "database": connection.vendor})
