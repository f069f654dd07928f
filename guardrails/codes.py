"""Codes the guardrails room answers with. One enum; a code is never reused for another meaning."""

from __future__ import annotations

from enum import StrEnum


class GuardrailCode(StrEnum):
    INVALID_SETTING = "INVALID_SETTING"  # a value outside a setting's type or bounds
