"""The provider this instance is configured with (the protocol and its error: ``ai.provider``)."""

from __future__ import annotations

import os

from kernel import deployment
from processes.ai.local import LocalProvider
from processes.ai.openai_compat import OpenAICompatProvider
from processes.ai.provider import AiProvider, AiProviderError
from processes.codes import ProcessCode
from processes.planning import outside_call_check


def ai_provider() -> AiProvider:
    """The configured provider (``TURBOBASE_AI_PROVIDER``: ``local`` or ``openai``), read per call."""
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
