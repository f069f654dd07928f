"""The provider protocol, its one error, and the provider this instance is configured with."""

from __future__ import annotations

import os
from typing import Any, Protocol

from kernel import deployment
from processes.codes import ProcessCode
from processes.planning import outside_call_check


class AiProviderError(Exception):
    """The provider did not answer; ``code`` (the provider's own where it gave one) goes on the ledger.

    ``transient``: asking again later may work (a 5xx, a 429, a timeout, a refused connection), so
    the engine parks the run ``retrying`` instead of failing the step (engine.ai_step)."""

    def __init__(self, code: str, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.code, self.message, self.transient = code, message, transient


class AiProvider(Protocol):
    name: str

    def answer(self, *, prompt: str, schema: dict[str, Any] | None) -> Any:
        """The answer to ``prompt``: text, or (with ``schema``) a JSON value meant to fit it."""
        raise NotImplementedError("subclasses of AiProvider must provide answer()")


def ai_provider() -> AiProvider:
    """The configured provider (``TURBOBASE_AI_PROVIDER``: ``local`` or ``openai``), read per call."""
    from processes.ai.local import LocalProvider
    from processes.ai.openai_compat import OpenAICompatProvider

    outside_call_check("an AI step's answer comes from its provider when the run asks it")
    kind = deployment.ai_provider_kind()
    if kind == "local":
        return LocalProvider()
    if kind == "openai":
        return OpenAICompatProvider(
            base_url=deployment.ai_base_url(),
            model=deployment.ai_model(),
            api_key=os.environ.get("TURBOBASE_AI_API_KEY", ""),
            timeout_s=deployment.ai_timeout_s(),
        )
    raise AiProviderError(
        ProcessCode.AI_PROVIDER_UNKNOWN, f"TURBOBASE_AI_PROVIDER={kind!r} is not local or openai"
    )
