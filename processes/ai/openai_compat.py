"""The ``openai`` provider: any server speaking OpenAI's chat-completions API.

One ``POST {base}/chat/completions`` per question. With a schema it asks for a JSON answer
(``response_format: json_schema``) and parses it; the engine then checks the answer against the
schema itself, whatever the server promised. A refusal from the server keeps the server's own
code (``error.code``, else ``error.type``, else ``AI_PROVIDER_HTTP_<status>``); a server that
cannot be reached is ``AI_PROVIDER_UNREACHABLE``. A 5xx, a 429, a timeout or a refused connection
is transient (the engine asks again later); any other refusal is not. Vendor errors are translated here, at the edge.
"""

from __future__ import annotations

import json
from typing import Any

import requests

from processes.ai.provider import AiProviderError
from processes.codes import ProcessCode


class OpenAICompatProvider:
    name = "openai"

    def __init__(self, *, base_url: str, model: str, api_key: str, timeout_s: float) -> None:
        self.base_url, self.model, self.timeout_s = base_url.rstrip("/"), model, timeout_s
        self._api_key = api_key  # never logged, never in a context

    def answer(self, *, prompt: str, schema: dict[str, Any] | None) -> Any:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
        }
        if schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": False},
            }
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            res = requests.post(
                f"{self.base_url}/chat/completions",
                json=body,
                headers=headers,
                timeout=self.timeout_s,
            )
        except requests.RequestException as exc:
            raise AiProviderError(
                ProcessCode.AI_PROVIDER_UNREACHABLE,
                f"the AI provider at {self.base_url} did not answer: {type(exc).__name__}",
                transient=isinstance(exc, (requests.Timeout, requests.ConnectionError)),
            ) from exc
        if res.status_code >= 300:
            raise _refusal(res)
        try:
            content = res.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise AiProviderError(
                ProcessCode.AI_ANSWER_INVALID, "the AI provider's answer had no message content"
            ) from exc
        if schema is None:
            return content
        try:
            return json.loads(content)
        except (TypeError, ValueError) as exc:
            raise AiProviderError(
                ProcessCode.AI_ANSWER_INVALID, "the AI provider's answer was not JSON"
            ) from exc


def _refusal(res: requests.Response) -> AiProviderError:
    try:
        error = res.json().get("error") or {}
    except ValueError:
        error = {}
    if not isinstance(error, dict):
        error = {"message": str(error)}
    code = error.get("code") or error.get("type") or f"AI_PROVIDER_HTTP_{res.status_code}"
    message = error.get("message") or f"the AI provider answered HTTP {res.status_code}"
    return AiProviderError(
        str(code),
        f"the AI provider refused ({res.status_code}): {message}",
        transient=res.status_code >= 500 or res.status_code == 429,
    )
