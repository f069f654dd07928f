"""Every instance setting, declared once: key, type, default, bounds, group and description.

This is the one source the readers (``guardrails.settings.setting_get``), the admin's Settings
page and the settings API build on. Keys are ``SettingKey`` members (``guardrails.setting_keys``,
old names included); what a declaration is and how it checks a value is ``guardrails.setting_spec``.
"""

from __future__ import annotations

from guardrails.patterns import pattern_spec
from guardrails.setting_keys import SettingKey, setting_key_resolve
from guardrails.setting_spec import (
    SettingGroup,
    SettingInvalid,
    SettingSpec,
    SettingType,
)

__all__ = [
    "REGISTRY",
    "SETTINGS",
    "SettingGroup",
    "SettingInvalid",
    "SettingSpec",
    "SettingType",
    "setting_spec",
]

_K = SettingKey
_G = SettingGroup
_T = SettingType
_MINUTE, _HOUR = 60_000, 3_600_000

SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec(
        _K.GUARDRAILS_MAX_DELETES_PER_MIN,
        _T.INTEGER,
        60,
        _G.DELETE_CAPS,
        "Deletes apps and people may send in any minute; over it a delete is refused.",
    ),
    SettingSpec(
        _K.GUARDRAILS_MAX_DELETES_PER_HOUR,
        _T.INTEGER,
        1_000,
        _G.DELETE_CAPS,
        "Deletes apps and people may send in any hour.",
    ),
    SettingSpec(
        _K.GUARDRAILS_MAX_DELETES_PER_DAY,
        _T.INTEGER,
        5_000,
        _G.DELETE_CAPS,
        "Deletes apps and people may send in any day.",
    ),
    SettingSpec(
        _K.GUARDRAILS_MAX_ROLLBACK_DELETES_PER_MIN,
        _T.INTEGER,
        600,
        _G.ROLLBACK_CAPS,
        "Rollback deletes of runs in any minute; over it the rollback waits for the window.",
    ),
    SettingSpec(
        _K.GUARDRAILS_MAX_ROLLBACK_DELETES_PER_HOUR,
        _T.INTEGER,
        10_000,
        _G.ROLLBACK_CAPS,
        "Rollback deletes of runs in any hour.",
    ),
    SettingSpec(
        _K.GUARDRAILS_MAX_ROLLBACK_DELETES_PER_DAY,
        _T.INTEGER,
        50_000,
        _G.ROLLBACK_CAPS,
        "Rollback deletes of runs in any day.",
    ),
    SettingSpec(
        _K.PROCESSES_SLICE_MAX_ROWS,
        _T.INTEGER,
        500,
        _G.SLICES,
        "Rows one migration slice works through before it queues the next.",
        min=1,
    ),
    SettingSpec(
        _K.PROCESSES_SLICE_BATCH_ROWS,
        _T.INTEGER,
        1000,
        _G.SLICES,
        "Rows of a one-create-step migration written per transaction (with their ledger rows); "
        "1 writes row by row.",
        min=1,
    ),
    SettingSpec(
        _K.PROCESSES_SLICE_MAX_MS,
        _T.MILLISECONDS,
        10 * _MINUTE,
        _G.SLICES,
        "Wall clock one slice may run; a slice always finishes the row in hand.",
        min=1,
    ),
    SettingSpec(
        _K.PROCESSES_SLICE_CAP, _T.INTEGER, 1000, _G.SLICES, "Slices one run may take.", min=1
    ),
    SettingSpec(
        _K.PROCESSES_STEP_GROUP_MAX,
        _T.INTEGER,
        16,
        _G.SLICES,
        "Steps of one run a worker writes together in one transaction (PostgreSQL); "
        "1 writes every step alone.",
        min=1,
        max=256,
    ),
    SettingSpec(
        _K.PROCESSES_SYNC_BUDGET_MS,
        _T.MILLISECONDS,
        30_000,
        _G.WAITS,
        "How long ?mode=sync holds the request before answering 202 sync_budget_exceeded.",
        min=1,
    ),
    SettingSpec(
        _K.PROCESSES_AWAIT_SOURCE_BUDGET_MS,
        _T.MILLISECONDS,
        5 * _MINUTE,
        _G.WAITS,
        "How long an awaitSource step waits for the source's verdict; 0 ends the wait at once.",
    ),
    SettingSpec(
        _K.PROCESSES_TRANSIENT_RETRIES,
        _T.INTEGER,
        5,
        _G.WAITS,
        "How many times an AI step asks its provider while it fails transiently (5xx, 429, a "
        "timeout, a refused connection), waiting 1 s, 2 s, 4 s … between; then the step fails.",
        min=1,
        max=20,
    ),
    SettingSpec(
        _K.PROCESSES_DELETE_WAIT_BUDGET_MS,
        _T.MILLISECONDS,
        5 * _MINUTE,
        _G.WAITS,
        "How long a rollback delete waits for the rollback window to free; 0 does not wait.",
    ),
    SettingSpec(
        _K.STEER_APPROVAL_OVER,
        _T.INTEGER,
        100,
        _G.STEERING,
        "A bulk action over more runs than this waits for another administrator's approval.",
    ),
    SettingSpec(
        _K.STEER_BULK_MAX_RUNS,
        _T.INTEGER,
        10_000,
        _G.STEERING,
        "The most runs one bulk action may take (a larger filter is refused: narrow it).",
        min=1,
        max=1_000_000,
    ),
    SettingSpec(
        _K.PROCESSES_ENABLED,
        _T.BOOLEAN,
        1,
        _G.SWITCHES,
        "The instance-wide process switch: off refuses every invoke.",
        max=1,
    ),
    SettingSpec(
        _K.PROCESSES_MAX_RUN_MS,
        _T.MILLISECONDS,
        0,
        _G.RUN_CEILINGS,
        "Working time one run may take, waits not counted; 0 derives it from the slice budget.",
    ),
    SettingSpec(
        _K.PROCESSES_MAX_WRITES_PER_RUN,
        _T.INTEGER,
        0,
        _G.RUN_CEILINGS,
        "Writes one run may make; 0 derives it from the slice budget.",
    ),
    SettingSpec(
        _K.PROCESSES_RUN_TIMEOUT_MS,
        _T.MILLISECONDS,
        0,
        _G.RUN_CEILINGS,
        "A run not finished this long after it was created is cancelled (failure code "
        "run_timeout), as a cancel would; 0 never times a run out.",
    ),
    SettingSpec(
        _K.PROCESSES_FOR_EACH_MAX_ITEMS,
        _T.INTEGER,
        100,
        _G.RUN_CEILINGS,
        "Items one forEach step may repeat over.",
        min=1,
    ),
    SettingSpec(
        _K.PROCESSES_QUERY_TIMEOUT_MS,
        _T.MILLISECONDS,
        30_000,
        _G.READS,
        "How long one ctx.query may run.",
        min=1,
    ),
    SettingSpec(
        _K.PROCESSES_QUERY_SLOT_WAIT_MS,
        _T.MILLISECONDS,
        2 * _MINUTE,
        _G.READS,
        "How long a ctx.query waits for a free read slot.",
        min=1,
    ),
    SettingSpec(
        _K.PROCESSES_STEP_TIME_BUDGET_MS,
        _T.MILLISECONDS,
        30_000,
        _G.READS,
        "The wall time one call into a process's code (a step's build, when, …) may take: its "
        "CPU and the time spent answering its ctx.query reads together.",
        min=100,
    ),
    SettingSpec(
        _K.PROCESSES_QUERY_SLOTS,
        _T.INTEGER,
        4,
        _G.READS,
        "ctx.query reads running at once per worker process.",
        min=1,
    ),
    SettingSpec(
        _K.PROCESSES_QUERY_MAX_BYTES,
        _T.BYTES,
        8 * 1024 * 1024,
        _G.READS,
        "The largest answer one ctx.query may return.",
        min=1,
    ),
    SettingSpec(
        _K.PROCESSES_BATCH_MAX_ROWS,
        _T.INTEGER,
        1_000,
        _G.READS,
        "Rows one /v1/batch read may return.",
        min=1,
    ),
    SettingSpec(
        _K.REST_MAX_RESPONSE_BYTES,
        _T.BYTES,
        10 * 1024 * 1024,
        _G.READS,
        "The largest answer one /v1/rest read may return; past it the read is refused 413 "
        "READ_BYTE_CEILING, never answered short.",
        min=1,
    ),
    SettingSpec(
        _K.BATCH_MAX_READS,
        _T.INTEGER,
        50,
        _G.READS,
        "Reads one /v1/batch request may hold.",
        min=1,
    ),
    SettingSpec(
        _K.PROCESSES_QUEUE_MAX_RUNS,
        _T.INTEGER,
        500,
        _G.READS,
        "Runs GET /v1/processes/queue lists, newest first (its counts cover every run).",
        min=1,
    ),
    SettingSpec(
        _K.EXTENSIONS_HOOK_CPU_MS,
        _T.MILLISECONDS,
        500,
        _G.HOOKS,
        "CPU one hook call may use; past it the write is refused HOOK_TIMEOUT.",
        min=1,
    ),
    SettingSpec(
        _K.EXTENSIONS_DEPLOY_TYPECHECK,
        _T.BOOLEAN,
        1,
        _G.SWITCHES,
        "Type-check a process at deploy against the catalog's record types and the deployed "
        "processes: on refuses a type error with 422 EXTENSION_TYPE_ERROR.",
        max=1,
    ),
    SettingSpec(
        _K.HISTORY_RETAIN_DAYS,
        _T.INTEGER,
        90,
        _G.HISTORY,
        "Finished runs (with their ledger, event waits and tasks) older than this many days are "
        "purged in the background; never a run that has not finished.",
        min=1,
        max=36_500,
    ),
    SettingSpec(
        _K.HISTORY_RETAIN_RUNS,
        _T.INTEGER,
        1_000_000,
        _G.HISTORY,
        "The most finished runs kept, newest first; older ones are purged in the background.",
        min=1,
    ),
    SettingSpec(
        _K.TRAIL_RETAIN_DAYS,
        _T.INTEGER,
        0,
        _G.HISTORY,
        "Write-trail rows older than this many days are purged with the run history; 0 keeps "
        "every row (a record's lineage reads the trail).",
        max=36_500,
    ),
    SettingSpec(
        _K.AUDIT_RETAIN_DAYS,
        _T.INTEGER,
        0,
        _G.HISTORY,
        "Audit events older than this many days are purged with the run history; 0 keeps every "
        "event.",
        max=36_500,
    ),
    SettingSpec(
        _K.SOURCES_MAX_ATTEMPTS,
        _T.INTEGER,
        8,
        _G.SOURCES,
        "Attempts an outbound write makes on transient errors at growing intervals; after them it "
        "keeps retrying at the cap interval (it never parks: later writes of its type wait behind it).",
        min=1,
    ),
)

REGISTRY: dict[SettingKey, SettingSpec] = {SettingKey(spec.key): spec for spec in SETTINGS}


def setting_spec(key: str) -> SettingSpec:
    """The declaration of ``key`` (a ``SettingKey``, an old name: its new one's declaration, else a
    pattern's concrete key); an unknown key is refused by name."""
    resolved = setting_key_resolve(key)
    spec = REGISTRY[resolved] if resolved is not None else pattern_spec(key)
    if spec is None:
        raise SettingInvalid(f"{key!r} is not an instance setting", field=key, key=key)
    return spec
