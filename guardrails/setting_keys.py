"""The name of every instance setting, and the old names still accepted for one release.

Code reads and writes a setting by its member here (``setting_get(SettingKey.PROCESSES_ENABLED)``),
never by a string, so a name is spelled once and a typo fails at import. Names are dotted, lower
case, ``<room>.<what>``. The seed's upper-case names (``PROCESS_SLICE_MAX_ROWS`` …) were renamed;
``SETTING_ALIASES`` maps each old name to its new one, and every door (the API, the CLI, the admin,
``setting_get``) answers an old name with the new one. This module imports nothing of Django, so
the CLI may use it too.
"""

from __future__ import annotations

from enum import StrEnum


class SettingKey(StrEnum):
    GUARDRAILS_MAX_DELETES_PER_MIN = "guardrails.max_deletes_per_min"
    GUARDRAILS_MAX_DELETES_PER_HOUR = "guardrails.max_deletes_per_hour"
    GUARDRAILS_MAX_DELETES_PER_DAY = "guardrails.max_deletes_per_day"
    GUARDRAILS_MAX_ROLLBACK_DELETES_PER_MIN = "guardrails.max_rollback_deletes_per_min"
    GUARDRAILS_MAX_ROLLBACK_DELETES_PER_HOUR = "guardrails.max_rollback_deletes_per_hour"
    GUARDRAILS_MAX_ROLLBACK_DELETES_PER_DAY = "guardrails.max_rollback_deletes_per_day"
    PROCESSES_SLICE_MAX_ROWS = "processes.slice_max_rows"
    PROCESSES_SLICE_BATCH_ROWS = "processes.slice_batch_rows"
    PROCESSES_SLICE_MAX_MS = "processes.slice_max_ms"
    PROCESSES_SLICE_CAP = "processes.slice_cap"
    PROCESSES_STEP_GROUP_MAX = "processes.step_group_max"
    PROCESSES_SYNC_BUDGET_MS = "processes.sync_budget_ms"
    PROCESSES_AWAIT_SOURCE_BUDGET_MS = "processes.await_source_budget_ms"
    PROCESSES_TRANSIENT_RETRIES = "processes.transient_retries"
    PROCESSES_DELETE_WAIT_BUDGET_MS = "processes.delete_wait_budget_ms"
    STEER_APPROVAL_OVER = "steer.approval_over"
    STEER_BULK_MAX_RUNS = "steer.bulk_max_runs"
    PROCESSES_ENABLED = "processes.enabled"
    PROCESSES_MAX_RUN_MS = "processes.max_run_ms"
    PROCESSES_MAX_WRITES_PER_RUN = "processes.max_writes_per_run"
    PROCESSES_RUN_TIMEOUT_MS = "processes.run_timeout_ms"
    PROCESSES_FOR_EACH_MAX_ITEMS = "processes.for_each_max_items"
    PROCESSES_QUERY_TIMEOUT_MS = "processes.query_timeout_ms"
    PROCESSES_QUERY_SLOT_WAIT_MS = "processes.query_slot_wait_ms"
    PROCESSES_STEP_TIME_BUDGET_MS = "processes.step_time_budget_ms"
    PROCESSES_QUERY_SLOTS = "processes.query_slots"
    PROCESSES_QUERY_MAX_BYTES = "processes.query_max_bytes"
    PROCESSES_BATCH_MAX_ROWS = "processes.batch_max_rows"
    PROCESSES_QUEUE_MAX_RUNS = "processes.queue_max_runs"
    REST_MAX_RESPONSE_BYTES = "rest.max_response_bytes"
    BATCH_MAX_READS = "batch.max_reads"
    EXTENSIONS_HOOK_CPU_MS = "extensions.hook_cpu_ms"
    EXTENSIONS_DEPLOY_TYPECHECK = "extensions.deploy_typecheck"
    HISTORY_RETAIN_DAYS = "history.retain_days"
    HISTORY_RETAIN_RUNS = "history.retain_runs"
    TRAIL_RETAIN_DAYS = "trail.retain_days"
    AUDIT_RETAIN_DAYS = "audit.retain_days"
    SOURCES_MAX_ATTEMPTS = "sources.max_attempts"


# Old name → new name. Accepted for one release; the data migration guardrails 0003 renamed the
# stored rows, and the Django-settings fallback still reads the old upper-case names.
SETTING_ALIASES: dict[str, SettingKey] = {
    "PROCESS_SLICE_MAX_ROWS": SettingKey.PROCESSES_SLICE_MAX_ROWS,
    "PROCESS_SLICE_BATCH_ROWS": SettingKey.PROCESSES_SLICE_BATCH_ROWS,
    "PROCESS_SLICE_MAX_MS": SettingKey.PROCESSES_SLICE_MAX_MS,
    "PROCESS_QUEUE_MAX_RUNS": SettingKey.PROCESSES_QUEUE_MAX_RUNS,
}


def setting_key_resolve(name: str) -> SettingKey | None:
    """The setting ``name`` names (its own name or an old alias), or ``None`` for no setting."""
    if name in SETTING_ALIASES:
        return SETTING_ALIASES[name]
    try:
        return SettingKey(name)
    except ValueError:
        return None


def setting_aliases_of(key: str) -> tuple[str, ...]:
    """The old names of ``key`` (none for most settings)."""
    return tuple(old for old, new in SETTING_ALIASES.items() if new == key)
