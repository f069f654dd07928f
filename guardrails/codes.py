"""Codes the guardrails room answers with. One enum; a code is never reused for another meaning."""

from __future__ import annotations

from enum import StrEnum


class GuardrailCode(StrEnum):
    INVALID_SETTING = "INVALID_SETTING"  # a value outside a setting's type or bounds


class GuardrailError(StrEnum):
    """The top-level ``error`` of the guardrails room's answers. Never reused."""

    INVALID_SETTING = "invalid_setting"
