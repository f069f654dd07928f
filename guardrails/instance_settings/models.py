"""Proxies that give instance settings their place in the admin's "Settings" section."""

from __future__ import annotations

from guardrails.models import InstanceSetting


class WriteGuardrail(InstanceSetting):
    """Settings → Write guardrails: the delete caps and the rollback caps."""

    class Meta:
        proxy = True
        verbose_name = "write guardrail"
        verbose_name_plural = "write guardrails"
