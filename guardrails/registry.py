"""Every instance setting, declared once: key, type, default, bounds, group and description.

This is the one source the readers (``guardrails.settings.setting_get``), the admin's Settings
page and the settings API build on. A value is always an integer in storage; ``boolean`` settings
hold 0 or 1 and ``milliseconds`` settings a duration. ``SettingSpec`` checks every value and names
the key it refuses: ``parse`` a JSON value (strictly typed), ``parse_text`` an operator's text,
``check`` a stored value from Python code. Keys keep the seed's spelling (``PROCESS_SLICE_MAX_ROWS``, ``guardrails.*``).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any

from guardrails.codes import GuardrailCode
from kernel.errors import InvalidRequest

_INT_MAX = 2**31 - 1  # every value fits a 32-bit integer column and a JavaScript number


class SettingType(enum.StrEnum):
    INTEGER = "integer"
    BOOLEAN = "boolean"
    MILLISECONDS = "milliseconds"
    BYTES = "bytes"


class SettingGroup(enum.StrEnum):
    DELETE_CAPS = "delete caps"
    ROLLBACK_CAPS = "rollback caps"
    SLICES = "slices"
    WAITS = "waits"
    RUN_CEILINGS = "per-run ceilings"
    READS = "reads"
    HOOKS = "hooks"
    SOURCES = "sources"
    SWITCHES = "switches"
    STEERING = "steering"
    HISTORY = "history"


class SettingInvalid(InvalidRequest):
    """That value is not valid for that setting."""

    error = "invalid_setting"
    code = GuardrailCode.INVALID_SETTING


@dataclass(frozen=True)
class SettingSpec:
    key: str
    type: SettingType
    default: int
    group: SettingGroup
    description: str
    min: int = 0
    max: int = _INT_MAX

    def parse(self, raw: Any) -> int:
        """The stored integer for a JSON value (the API), or ``SettingInvalid`` naming the key.

        Strict: a boolean setting takes ``true``/``false`` only; every other setting a JSON
        integer only — not a boolean, not text (``"10"``), not a number with a point (``10.0``).
        """
        if self.type is SettingType.BOOLEAN:
            if not isinstance(raw, bool):
                raise self._invalid(f"must be true or false, not {_shown_raw(raw)}")
            return int(raw)
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise self._invalid(f"must be a whole number (a JSON integer), not {_shown_raw(raw)}")
        if not self.min <= raw <= self.max:
            raise self._invalid(f"must be between {self.min} and {self.max}")
        return raw

    def parse_text(self, text: str) -> int:
        """The stored integer for an operator's text (the admin form): ASCII digits with an
        optional leading minus (no ``_``, ``,``, ``+`` or exponent), or ``true``/``false``."""
        if self.type is SettingType.BOOLEAN:
            return self.parse({"true": True, "false": False}.get(text, text))
        if len(text) > 12 or not _WHOLE_NUMBER.fullmatch(text):
            raise self._invalid(f"must be a whole number, not {text!r:.40}")
        return self.parse(int(text))

    def check(self, value: int) -> int:
        """A value already in its stored form, from Python code (``setting_set``): an int, for a
        boolean 0 or 1 (or a bool). Text is refused here too."""
        if self.type is SettingType.BOOLEAN and type(value) is int and value in (0, 1):
            return value
        return self.parse(value)

    def _invalid(self, reason: str) -> SettingInvalid:
        return SettingInvalid(f"{self.key} {reason}", field=self.key, key=self.key)


_WHOLE_NUMBER = re.compile(r"-?[0-9]+")


def _shown_raw(raw: Any) -> str:
    """What a refused value was, in JSON's words (the message names what came, not just what is due)."""
    if isinstance(raw, str):
        return f"the text {raw!r:.40}"
    if isinstance(raw, bool) or raw is None:
        return {True: "true", False: "false", None: "null"}[raw]
    if isinstance(raw, int | float):
        return f"{raw!r:.40}"
    if isinstance(raw, list | dict):
        return "a list" if isinstance(raw, list) else "an object"
    return type(raw).__name__


_G = SettingGroup
_T = SettingType
_MINUTE, _HOUR = 60_000, 3_600_000

SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "guardrails.max_deletes_per_min",
        _T.INTEGER,
        60,
        _G.DELETE_CAPS,
        "Deletes apps and people may send in any minute; over it a delete is refused.",
    ),
    SettingSpec(
        "guardrails.max_deletes_per_hour",
        _T.INTEGER,
        1_000,
        _G.DELETE_CAPS,
        "Deletes apps and people may send in any hour.",
    ),
    SettingSpec(
        "guardrails.max_deletes_per_day",
        _T.INTEGER,
        5_000,
        _G.DELETE_CAPS,
        "Deletes apps and people may send in any day.",
    ),
    SettingSpec(
        "guardrails.max_rollback_deletes_per_min",
        _T.INTEGER,
        600,
        _G.ROLLBACK_CAPS,
        "Rollback deletes of runs in any minute; over it the rollback waits for the window.",
    ),
    SettingSpec(
        "guardrails.max_rollback_deletes_per_hour",
        _T.INTEGER,
        10_000,
        _G.ROLLBACK_CAPS,
        "Rollback deletes of runs in any hour.",
    ),
    SettingSpec(
        "guardrails.max_rollback_deletes_per_day",
        _T.INTEGER,
        50_000,
        _G.ROLLBACK_CAPS,
        "Rollback deletes of runs in any day.",
    ),
    SettingSpec(
        "PROCESS_SLICE_MAX_ROWS",
        _T.INTEGER,
        500,
        _G.SLICES,
        "Rows one migration slice works through before it queues the next.",
        min=1,
    ),
    SettingSpec(
        "PROCESS_SLICE_BATCH_ROWS",
        _T.INTEGER,
        1000,
        _G.SLICES,
        "Rows of a one-create-step migration written per transaction (with their ledger rows); "
        "1 writes row by row.",
        min=1,
    ),
    SettingSpec(
        "PROCESS_SLICE_MAX_MS",
        _T.MILLISECONDS,
        10 * _MINUTE,
        _G.SLICES,
        "Wall clock one slice may run; a slice always finishes the row in hand.",
        min=1,
    ),
    SettingSpec(
        "processes.slice_cap", _T.INTEGER, 1000, _G.SLICES, "Slices one run may take.", min=1
    ),
    SettingSpec(
        "processes.step_group_max",
        _T.INTEGER,
        16,
        _G.SLICES,
        "Steps of one run a worker writes together in one transaction (PostgreSQL); "
        "1 writes every step alone.",
        min=1,
        max=256,
    ),
    SettingSpec(
        "processes.sync_budget_ms",
        _T.MILLISECONDS,
        30_000,
        _G.WAITS,
        "How long ?mode=sync holds the request before answering 202 sync_budget_exceeded.",
        min=1,
    ),
    SettingSpec(
        "processes.await_source_budget_ms",
        _T.MILLISECONDS,
        5 * _MINUTE,
        _G.WAITS,
        "How long an awaitSource step waits for the source's verdict; 0 ends the wait at once.",
    ),
    SettingSpec(
        "processes.transient_retries",
        _T.INTEGER,
        5,
        _G.WAITS,
        "How many times an AI step asks its provider while it fails transiently (5xx, 429, a "
        "timeout, a refused connection), waiting 1 s, 2 s, 4 s … between; then the step fails.",
        min=1,
        max=20,
    ),
    SettingSpec(
        "processes.delete_wait_budget_ms",
        _T.MILLISECONDS,
        5 * _MINUTE,
        _G.WAITS,
        "How long a rollback delete waits for the rollback window to free; 0 does not wait.",
    ),
    SettingSpec(
        "steer.approval_over",
        _T.INTEGER,
        100,
        _G.STEERING,
        "A bulk action over more runs than this waits for another administrator's approval.",
    ),
    SettingSpec(
        "steer.bulk_max_runs",
        _T.INTEGER,
        10_000,
        _G.STEERING,
        "The most runs one bulk action may take (a larger filter is refused: narrow it).",
        min=1,
        max=1_000_000,
    ),
    SettingSpec(
        "processes.enabled",
        _T.BOOLEAN,
        1,
        _G.SWITCHES,
        "The instance-wide process switch: off refuses every invoke.",
        max=1,
    ),
    SettingSpec(
        "processes.max_run_ms",
        _T.MILLISECONDS,
        0,
        _G.RUN_CEILINGS,
        "Wall clock one run may take; 0 derives it from the slice budget.",
    ),
    SettingSpec(
        "processes.max_writes_per_run",
        _T.INTEGER,
        0,
        _G.RUN_CEILINGS,
        "Writes one run may make; 0 derives it from the slice budget.",
    ),
    SettingSpec(
        "processes.run_timeout_ms",
        _T.MILLISECONDS,
        0,
        _G.RUN_CEILINGS,
        "A run not finished this long after it was created is cancelled (failure code "
        "run_timeout), as a cancel would; 0 never times a run out.",
    ),
    SettingSpec(
        "processes.for_each_max_items",
        _T.INTEGER,
        100,
        _G.RUN_CEILINGS,
        "Items one forEach step may repeat over.",
        min=1,
    ),
    SettingSpec(
        "processes.query_timeout_ms",
        _T.MILLISECONDS,
        30_000,
        _G.READS,
        "How long one ctx.query may run.",
        min=1,
    ),
    SettingSpec(
        "processes.query_slot_wait_ms",
        _T.MILLISECONDS,
        2 * _MINUTE,
        _G.READS,
        "How long a ctx.query waits for a free read slot.",
        min=1,
    ),
    SettingSpec(
        "processes.step_time_budget_ms",
        _T.MILLISECONDS,
        30_000,
        _G.READS,
        "The wall time one call into a process's code (a step's build, when, …) may take: its "
        "CPU and the time spent answering its ctx.query reads together.",
        min=100,
    ),
    SettingSpec(
        "processes.query_slots",
        _T.INTEGER,
        4,
        _G.READS,
        "ctx.query reads running at once per worker process.",
        min=1,
    ),
    SettingSpec(
        "processes.query_max_bytes",
        _T.BYTES,
        8 * 1024 * 1024,
        _G.READS,
        "The largest answer one ctx.query may return.",
        min=1,
    ),
    SettingSpec(
        "processes.batch_max_rows",
        _T.INTEGER,
        1_000,
        _G.READS,
        "Rows one /v1/batch read may return.",
        min=1,
    ),
    SettingSpec(
        "rest.max_response_bytes",
        _T.BYTES,
        10 * 1024 * 1024,
        _G.READS,
        "The largest answer one /v1/rest read may return; past it the read is refused 413 "
        "READ_BYTE_CEILING, never answered short.",
        min=1,
    ),
    SettingSpec(
        "batch.max_reads",
        _T.INTEGER,
        50,
        _G.READS,
        "Reads one /v1/batch request may hold.",
        min=1,
    ),
    SettingSpec(
        "PROCESS_QUEUE_MAX_RUNS",
        _T.INTEGER,
        500,
        _G.READS,
        "Runs GET /v1/processes/queue lists, newest first (its counts cover every run).",
        min=1,
    ),
    SettingSpec(
        "extensions.hook_cpu_ms",
        _T.MILLISECONDS,
        500,
        _G.HOOKS,
        "CPU one hook call may use; past it the write is refused HOOK_TIMEOUT.",
        min=1,
    ),
    SettingSpec(
        "extensions.deploy_typecheck",
        _T.BOOLEAN,
        1,
        _G.SWITCHES,
        "Type-check a process at deploy against the catalog's record types and the deployed "
        "processes: on refuses a type error with 422 EXTENSION_TYPE_ERROR.",
        max=1,
    ),
    SettingSpec(
        "history.retain_days",
        _T.INTEGER,
        90,
        _G.HISTORY,
        "Finished runs (with their ledger, event waits and tasks) older than this many days are "
        "purged in the background; never a run that has not finished.",
        min=1,
        max=36_500,
    ),
    SettingSpec(
        "history.retain_runs",
        _T.INTEGER,
        1_000_000,
        _G.HISTORY,
        "The most finished runs kept, newest first; older ones are purged in the background.",
        min=1,
    ),
    SettingSpec(
        "trail.retain_days",
        _T.INTEGER,
        0,
        _G.HISTORY,
        "Write-trail rows older than this many days are purged with the run history; 0 keeps "
        "every row (a record's lineage reads the trail).",
        max=36_500,
    ),
    SettingSpec(
        "audit.retain_days",
        _T.INTEGER,
        0,
        _G.HISTORY,
        "Audit events older than this many days are purged with the run history; 0 keeps every "
        "event.",
        max=36_500,
    ),
    SettingSpec(
        "sources.max_attempts",
        _T.INTEGER,
        8,
        _G.SOURCES,
        "Attempts an outbound write makes on transient errors before it parks.",
        min=1,
    ),
)

REGISTRY: dict[str, SettingSpec] = {spec.key: spec for spec in SETTINGS}


def setting_spec(key: str) -> SettingSpec:
    """The declaration of ``key``; an unknown key is refused by name."""
    try:
        return REGISTRY[key]
    except KeyError:
        raise SettingInvalid(f"{key!r} is not an instance setting", field=key, key=key) from None
