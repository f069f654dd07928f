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
from turbobase.serializers import HealthOut, SignedInOut, SignInIn, WhoAmIOut


class SignInFailed(TurbobaseError):
    """Wrong username or password."""

    error = "invalid_credentials"
    http_status = 401


@method_decorator(ensure_csrf_cookie, name="dispatch")
class SessionView(APIView):
    """``POST`` signs in and answers the CSRF token; ``DELETE`` signs out; ``GET`` says who you are."""

    permission_classes = [AllowAny]
    scope_exempt = "signing in and out is what makes a session; GET answers any token its owner"
    authentication_classes = []  # signing in must not need a CSRF token yet

    @extend_schema(request=SignInIn, responses={200: SignedInOut, **error_responses(400, 401)})
    def post(self, request: Request) -> Response:
        data = request.data if isinstance(request.data, dict) else {}
        for name in ("username", "password"):
            if not isinstance(data.get(name), str) or not data.get(name):
                raise InvalidRequest(f"{name} is required", field=name)
        user = authenticate(request._request, username=data["username"], password=data["password"])
        if user is None:
            raise SignInFailed()
        login(request._request, user)
        return Response({"username": user.get_username(), "isAdmin": user.is_staff,
                         "csrfToken": get_token(request._request)})

    def get_authenticators(self):
        # Signing in (POST) and out must not need credentials or a CSRF token; "who am I" (GET)
        # answers for a session or a bearer token alike, so the CLI's whoami works with a token.
        if getattr(self.request, "method", "GET") == "GET":  # no request: the schema generator
            return [auth() for auth in api_settings.DEFAULT_AUTHENTICATION_CLASSES]
        return []

    @extend_schema(responses={200: WhoAmIOut, **error_responses(401)})
    def get(self, request: Request) -> Response:
        if not request.user.is_authenticated:
            raise NotAuthenticated("no session and no bearer token")
        token = request.auth if isinstance(request.auth, AccessToken) else None
        body = {"username": request.user.get_username(), "isAdmin": request.user.is_staff,
                "via": "token" if token else "session"}
        if token:
            body["scopes"] = list(token.scopes)
        else:
            body["csrfToken"] = get_token(request._request)
        return Response(body)

    @extend_schema(request=None, responses={204: OpenApiResponse(description="Signed out.")})
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
