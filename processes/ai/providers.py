"""The provider this instance is configured with (the protocol and its error: ``ai.provider``)."""

from __future__ import annotations

import os

from django.conf import settings

from processes.ai.local import LocalProvider
from processes.ai.openai_compat import OpenAICompatProvider
from processes.ai.provider import AiProvider, AiProviderError
from processes.codes import ProcessCode
from processes.planning import outside_call_check


def _setting(name: str, default: str = "") -> str:
    return str(getattr(settings, name, "") or os.environ.get(name, "") or default)


def ai_provider() -> AiProvider:
    """The configured provider (``TURBOBASE_AI_PROVIDER``: ``local`` or ``openai``), read per call."""
    outside_call_check("an AI step's answer comes from its provider when the run asks it")
    kind = _setting("TURBOBASE_AI_PROVIDER", "local")
    if kind == "local":
        return LocalProvider()
    if kind == "openai":
        return OpenAICompatProvider(
            base_url=_setting("TURBOBASE_AI_BASE_URL", "https://api.openai.com/v1"),
            model=_setting("TURBOBASE_AI_MODEL", "gpt-4o-mini"),
            api_key=os.environ.get("TURBOBASE_AI_API_KEY", ""),
            timeout_s=float(_setting("TURBOBASE_AI_TIMEOUT_S", "60")),
        )
    raise AiProviderError(
        ProcessCode.AI_PROVIDER_UNKNOWN, f"TURBOBASE_AI_PROVIDER={kind!r} is not local or openai"
    )
