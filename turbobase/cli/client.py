"""The HTTP client behind the ``turbobase`` CLI.

It reads ``TURBOBASE_URL`` (the instance, e.g. ``http://127.0.0.1:8000``) and ``TURBOBASE_TOKEN``
(a personal access token from ``manage.py tb_token``) and turns every failure into an ``ApiError``
or ``ClientConfigError`` whose message says what to do, never a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import requests

TOKEN_HINT = "issue one with: python manage.py tb_token <username> --scope extensions:deploy"


class ClientError(Exception):
    """Anything the client could not do; ``str()`` is a sentence for the user."""

    exit_code = 1


class ClientConfigError(ClientError):
    """The environment does not say where or who (``TURBOBASE_URL`` / ``TURBOBASE_TOKEN``)."""

    exit_code = 2


class ApiError(ClientError):
    """The instance answered with an error status; ``body`` is its JSON (or ``None``)."""

    def __init__(self, status: int, body: Any, *, method: str, path: str) -> None:
        self.status = status
        self.body = body
        self.method = method
        self.path = path
        super().__init__(self._sentence())

    @property
    def error(self) -> str | None:
        return self.body.get("error") if isinstance(self.body, dict) else None

    @property
    def rejection(self) -> dict[str, Any] | None:
        rejection = self.body.get("rejection") if isinstance(self.body, dict) else None
        return rejection if isinstance(rejection, dict) else None

    def _sentence(self) -> str:
        head = f"{self.method} {self.path} answered {self.status}"
        if not isinstance(self.body, dict):
            return head
        if self.rejection:
            field = f" ({self.rejection['field']})" if self.rejection.get("field") else ""
            return f"{head} {self.error}: {self.rejection.get('code')}{field}: {self.rejection.get('message')}"
        message = self.body.get("message") or self.body.get("detail") or ""
        text = f"{head} {self.error or 'error'}" + (f": {message}" if message else "")
        if self.status == 401:
            text += "; set TURBOBASE_TOKEN to a valid token (" + TOKEN_HINT + ")"
        return text


class Client:
    """A thin JSON-over-HTTP client for one Turbobase instance."""

    def __init__(self, *, url: str | None, token: str | None, timeout: float = 60.0) -> None:
        self.url = (url or "").strip().rstrip("/")
        self.token = (token or "").strip() or None
        self.timeout = timeout
        self._session = requests.Session()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Client:
        environ = os.environ if environ is None else environ
        return cls(url=environ.get("TURBOBASE_URL"), token=environ.get("TURBOBASE_TOKEN"))

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | Sequence[tuple[str, Any]] | None = None,
        authenticated: bool = True,
    ) -> Any:
        """Send one request; answer the decoded JSON body (``None`` for an empty one)."""
        if not self.url:
            raise ClientConfigError(
                "TURBOBASE_URL is not set; point it at the instance, e.g. export TURBOBASE_URL=http://127.0.0.1:8000"
            )
        if not self.url.startswith(("http://", "https://")):
            raise ClientConfigError(
                f"TURBOBASE_URL must start with http:// or https:// (got {self.url!r})"
            )
        headers = {"Accept": "application/json"}
        if authenticated:
            if not self.token:
                raise ClientConfigError("TURBOBASE_TOKEN is not set; " + TOKEN_HINT)
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            response = self._session.request(
                method,
                self.url + path,
                json=json,
                params=params,
                headers=headers,
                timeout=self.timeout,
            )
        except requests.ConnectionError as exc:
            raise ClientError(
                f"cannot reach Turbobase at {self.url}: is it running (make run)?"
            ) from exc
        except requests.Timeout as exc:
            raise ClientError(
                f"{method} {path}: no answer from {self.url} within {self.timeout:.0f}s"
            ) from exc
        body = _json_or_none(response)
        if response.status_code >= 400:
            raise ApiError(response.status_code, body, method=method, path=path)
        return body

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, json: Any = None, **kwargs: Any) -> Any:
        return self.request("POST", path, json=json, **kwargs)

    def patch(self, path: str, json: Any = None, **kwargs: Any) -> Any:
        return self.request("PATCH", path, json=json, **kwargs)

    def delete(self, path: str, json: Any = None, **kwargs: Any) -> Any:
        return self.request("DELETE", path, json=json, **kwargs)


def _json_or_none(response: requests.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return None
