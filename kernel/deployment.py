"""Deployment settings: what an operator fixes in Django settings (or, for a few, the environment).

The one reader of ``django.conf.settings`` for the rooms' tunables: each has a typed function here
and its default in ``DEPLOYMENT_DEFAULTS``, so a name is spelled once and no room reads
``getattr(settings, …)`` itself. Read lazily, at call time (tests override them with
``settings``), never at import. These are deployment choices; what an administrator changes at run
time is an instance setting (``guardrails.settings``), whose Django-settings fallback reads through
``deployment_named``.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings

DEPLOYMENT_DEFAULTS: dict[str, Any] = {
    # Sign-in lockout (kernel.sign_in): per username, and per address over every username.
    "TURBOBASE_SIGN_IN_MAX_FAILURES": 10,
    "TURBOBASE_SIGN_IN_WINDOW_S": 900,
    "TURBOBASE_SIGN_IN_ADDRESS_MAX_FAILURES": 100,
    "TURBOBASE_SIGN_IN_ADDRESS_WINDOW_S": 900,
    "TURBOBASE_TRUSTED_PROXIES": (),  # networks whose X-Forwarded-For is believed
    "TURBOBASE_INSTANCE_NAME": "",  # shown in the admin's title
    # One deploy's (or API lint's) sandbox and compile budget (extensions.deploy).
    "EXTENSIONS_DEPLOY_CPU_MS": 2_000,
    "EXTENSIONS_DEPLOY_MEMORY_MB": 512,
    "EXTENSIONS_DEPLOY_COMPILE_MS": 30_000,  # as extensions.transpile.DEFAULT_COMPILE_MS
    # The outbound worker (sources.conf).
    "SOURCES_RETRY_BASE_SECONDS": 1.0,
    "SOURCES_RETRY_CAP_SECONDS": 300.0,
    "SOURCES_INLINE_RETRY_SECONDS": 2.0,
    "SOURCES_LANE_LEASE_SECONDS": 120.0,
    "SOURCES_DRAIN_MAX_WRITES": 100,
    "SOURCES_DRAIN_MAX_SECONDS": 30.0,
    # The engine (processes).
    "PROCESS_RUN_LEASE_S": 120,
    "PROCESS_REDELIVERY_S": None,  # unset: a third of the lease, at most every 5 s
    "PROCESS_SYNC_IN_REQUEST": True,
    "TURBOBASE_HISTORY_ARCHIVE_DIR": None,  # unset: purged runs are not archived
    # The AI provider (processes.ai): a Django setting, else the environment, else this.
    "TURBOBASE_AI_PROVIDER": "local",
    "TURBOBASE_AI_BASE_URL": "https://api.openai.com/v1",
    "TURBOBASE_AI_MODEL": "gpt-4o-mini",
    "TURBOBASE_AI_TIMEOUT_S": "60",
}


def deployment_named(name: str) -> Any:
    """The Django setting ``name`` as configured, or ``None`` when it is not set."""
    return getattr(settings, name, None)


def _value(name: str) -> Any:
    value = deployment_named(name)
    return DEPLOYMENT_DEFAULTS[name] if value is None else value


def _from_environment(name: str) -> str:
    # A secret-free provider choice may come from the environment the workers inherit.
    return str(deployment_named(name) or os.environ.get(name, "") or DEPLOYMENT_DEFAULTS[name])


def sign_in_limits(*, whole_address: bool) -> tuple[int, timedelta]:
    """The most failed sign-ins and their window, per username or per address."""
    if whole_address:
        most = _value("TURBOBASE_SIGN_IN_ADDRESS_MAX_FAILURES")
        seconds = _value("TURBOBASE_SIGN_IN_ADDRESS_WINDOW_S")
    else:
        most = _value("TURBOBASE_SIGN_IN_MAX_FAILURES")
        seconds = _value("TURBOBASE_SIGN_IN_WINDOW_S")
    return int(most), timedelta(seconds=int(seconds))


def trusted_proxies() -> list[str]:
    return [str(proxy) for proxy in _value("TURBOBASE_TRUSTED_PROXIES") or ()]


def instance_name() -> str:
    return str(_value("TURBOBASE_INSTANCE_NAME") or "").strip()


def deploy_cpu_ms() -> int:
    return int(_value("EXTENSIONS_DEPLOY_CPU_MS"))


def deploy_memory_mb() -> int:
    return int(_value("EXTENSIONS_DEPLOY_MEMORY_MB"))


def deploy_compile_ms() -> int:
    return int(_value("EXTENSIONS_DEPLOY_COMPILE_MS"))


def sources_retry_base_seconds() -> float:
    return float(_value("SOURCES_RETRY_BASE_SECONDS"))


def sources_retry_cap_seconds() -> float:
    return float(_value("SOURCES_RETRY_CAP_SECONDS"))


def sources_inline_retry_seconds() -> float:
    return float(_value("SOURCES_INLINE_RETRY_SECONDS"))


def sources_lane_lease_seconds() -> float:
    return float(_value("SOURCES_LANE_LEASE_SECONDS"))


def sources_drain_max_writes() -> int:
    return int(_value("SOURCES_DRAIN_MAX_WRITES"))


def sources_drain_max_seconds() -> float:
    return float(_value("SOURCES_DRAIN_MAX_SECONDS"))


def run_lease_seconds() -> float:
    return float(_value("PROCESS_RUN_LEASE_S"))


def redelivery_seconds() -> float | None:
    """The configured redelivery interval, or ``None`` to derive it from the lease."""
    configured = _value("PROCESS_REDELIVERY_S")
    return float(configured) if configured else None


def is_sync_in_request() -> bool:
    return bool(_value("PROCESS_SYNC_IN_REQUEST"))


def history_archive_dir() -> Path | None:
    configured = _value("TURBOBASE_HISTORY_ARCHIVE_DIR")
    return Path(configured) if configured else None


def ai_provider_kind() -> str:
    return _from_environment("TURBOBASE_AI_PROVIDER")


def ai_base_url() -> str:
    return _from_environment("TURBOBASE_AI_BASE_URL")


def ai_model() -> str:
    return _from_environment("TURBOBASE_AI_MODEL")


def ai_timeout_s() -> float:
    return float(_from_environment("TURBOBASE_AI_TIMEOUT_S"))
