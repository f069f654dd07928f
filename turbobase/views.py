"""Session sign-in and health."""
from __future__ import annotations

from django.contrib.auth import authenticate, login, logout
from django.middleware.csrf import get_token
from django.views.decorators.csrf import ensure_csrf_cookie
from django.utils.decorators import method_decorator
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from turbobase.errors import InvalidRequest, TurbobaseError


class SignInFailed(TurbobaseError):
    """Wrong username or password."""

    error = "invalid_credentials"
    http_status = 401


@method_decorator(ensure_csrf_cookie, name="dispatch")
class SessionView(APIView):
    """``POST`` signs in and answers the CSRF token; ``DELETE`` signs out; ``GET`` says who you are."""

    permission_classes = [AllowAny]
    authentication_classes = []  # signing in must not need a CSRF token yet

    @extend_schema(request=dict, responses={200: dict})
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

    def get(self, request: Request) -> Response:
        user = request._request.user
        if not user.is_authenticated:
            return Response({"error": "not_authenticated", "message": "no session"}, status=401)
        return Response({"username": user.get_username(), "isAdmin": user.is_staff,
                         "csrfToken": get_token(request._request)})

    def delete(self, request: Request) -> Response:
        logout(request._request)
        return Response(status=204)


class HealthView(APIView):
    permission_classes = [AllowAny]
    authentication_classes = []

    def get(self, request: Request) -> Response:
        return Response({"status": "ok"})
