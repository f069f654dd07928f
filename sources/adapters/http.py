"""The ``http`` source: a JSON-over-HTTP connector.

Catalog: ``"sources": {"erp": {"adapter": "http", "url": "http://127.0.0.1:8001", "timeout": 10}}``.

- create: ``POST   <url>/<recordType>``               ``{pgRowId, parent, lines}``
- update: ``PATCH  <url>/<recordType>/<externalId>``  ``{pgRowId, parent}``
- delete: ``DELETE <url>/<recordType>/<externalId>``

Every request carries ``Idempotency-Key`` (one per write) so a write re-sent after a crash can be
recognised upstream. 2xx with ``{externalId}`` confirms (a delete may answer 204); 4xx with
``{code, field, message}`` refuses in the source's own words; 408, 429, 5xx, a timeout or a
connection error is transient and retried. A 429 or 503 (with ``Retry-After`` in seconds or as
an HTTP date, or without it) and a timeout also slow the whole source down (``sources.pacing``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote

import requests

from records.codes import RefusalCode
from sources.adapters.base import OutboundWrite, Outcome, SourceAdapter, confirmed
from sources.codes import SourceCode
from sources.errors import SourceRefused, SourceSlowDown, SourceUnavailable

DEFAULT_TIMEOUT_SECONDS = 10.0
RETRYABLE_STATUSES = frozenset({408, 425, 429})
SLOW_DOWN_STATUSES = frozenset({429, 503})


class HttpAdapter(SourceAdapter):
    """A connected system reached over HTTP with JSON bodies."""

    name = "http"

    @property
    def base_url(self) -> str:
        url = self.config.get("url")
        if not url:
            # A catalog mistake: keep the write queued (transient) and say what to fix.
            raise SourceUnavailable(f"source {self.source_name!r} has no url in the catalog")
        return str(url).rstrip("/")

    def create(self, write: OutboundWrite) -> Outcome:
        body = {"pgRowId": write.pg_row_id, "parent": write.parent, "lines": write.lines}
        answer = self._request("POST", self._url(write), write, body)
        external_id = answer.get("externalId")
        if not external_id:
            raise SourceRefused(
                f"{self.source_name} accepted the create but answered no externalId",
                code=SourceCode.SOURCE_ANSWER_INVALID,
                field="externalId",
            )
        return confirmed(str(external_id))

    def update(self, write: OutboundWrite) -> Outcome:
        answer = self._request(
            "PATCH",
            self._url(write, write.external_id),
            write,
            {"pgRowId": write.pg_row_id, "parent": write.parent},
        )
        return confirmed(str(answer.get("externalId") or write.external_id))

    def delete(self, write: OutboundWrite) -> Outcome:
        answer = self._request("DELETE", self._url(write, write.external_id), write, None)
        return confirmed(str(answer.get("externalId") or write.external_id))

    def _url(self, write: OutboundWrite, external_id: str | None = None) -> str:
        url = f"{self.base_url}/{quote(write.record_type.name, safe='')}"
        return f"{url}/{quote(external_id, safe='')}" if external_id else url

    def _request(
        self, method: str, url: str, write: OutboundWrite, body: dict | None
    ) -> dict[str, Any]:
        timeout = float(self.config.get("timeout", DEFAULT_TIMEOUT_SECONDS))
        try:
            response = requests.request(
                method,
                url,
                json=body,
                timeout=timeout,
                headers={"Idempotency-Key": write.idempotency_key, "Accept": "application/json"},
            )
        except requests.Timeout as exc:
            raise SourceSlowDown(f"{self.source_name} did not answer within {timeout:g}s") from exc
        except requests.RequestException as exc:
            raise SourceUnavailable(f"{self.source_name} could not be reached: {exc}") from exc
        status = response.status_code
        if status in SLOW_DOWN_STATUSES:
            retry_after = retry_after_seconds(response.headers.get("Retry-After"))
            asked = f" (Retry-After {retry_after:g}s)" if retry_after is not None else ""
            raise SourceSlowDown(
                f"{self.source_name} answered HTTP {status}{asked}", retry_after=retry_after
            )
        if status >= 500 or status in RETRYABLE_STATUSES:
            raise SourceUnavailable(f"{self.source_name} answered HTTP {status}")
        answer = self._json(response)
        if 400 <= status < 500:
            raise SourceRefused(
                str(
                    answer.get("message") or f"{self.source_name} refused the write (HTTP {status})"
                ),
                code=str(answer.get("code") or RefusalCode.SOURCE_REFUSED),
                field=answer.get("field"),
            )
        if not 200 <= status < 300:
            raise SourceUnavailable(f"{self.source_name} answered HTTP {status}")
        return answer

    def _json(self, response: requests.Response) -> dict[str, Any]:
        if not response.content:
            return {}
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if isinstance(answer, dict):
            return answer
        # A refusal in plain text still carries the source's sentence; a 2xx without a JSON
        # object confirms an update or delete, and leaves a create without its id (refused above).
        return {"message": response.text[:500]} if response.status_code >= 400 else {}


def retry_after_seconds(header: str | None, *, now: datetime | None = None) -> float | None:
    """``Retry-After`` as seconds from now (RFC 9110: delay-seconds or an HTTP date), or None."""
    if not header:
        return None
    text = header.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None  # unreadable: our own backoff applies
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
