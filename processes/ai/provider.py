"""What an AI provider is (``AiProvider``) and the one error it raises (``AiProviderError``).

Apart from ``providers`` (which picks the configured one) so each provider imports this and
``providers`` imports the providers: one direction.
"""

from __future__ import annotations

from typing import Any, Protocol


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
