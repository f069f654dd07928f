"""Codes the processes room answers with and puts on step ledger rows. Never reused.

One enum for the room (schedules, the contract, the engine and ``ctx.query`` included). The values
are what clients and the ledger's ``refusal_code`` carry, so they keep their spelling. A step's
refusal may also carry another room's code (the boundary's, a source's, the sandbox's) or a
hook's own: those are defined where they are raised, not copied here.
"""

from __future__ import annotations

from enum import StrEnum


class ProcessCode(StrEnum):
    # Invoking and steering a run.
    INPUT_INVALID = "INPUT_INVALID"
    INPUT_SCHEMA_UNUSABLE = "INPUT_SCHEMA_UNUSABLE"  # the deployed input schema cannot be applied
    INVALID_MODE = "INVALID_MODE"
    PROCESS_DISABLED = "PROCESS_DISABLED"  # a refused run's check: a switch was off
    PROCESS_RUN_NOT_RESUMABLE = "PROCESS_RUN_NOT_RESUMABLE"
    PROCESS_IS_A_MIGRATION = "PROCESS_IS_A_MIGRATION"
    PROCESS_RUN_NOT_ROLLBACKABLE = "PROCESS_RUN_NOT_ROLLBACKABLE"
    PROCESS_RUN_NOT_RETRYABLE = "PROCESS_RUN_NOT_RETRYABLE"
    PROCESS_RUN_NOT_REDRIVABLE = "PROCESS_RUN_NOT_REDRIVABLE"  # only a failed run is redriven
    REDRIVE_INVALID = "REDRIVE_INVALID"  # a redrive body's field (``version``), named
    # Deploying a process or a schedule.
    PROCESS_CONTRACT_INVALID = "PROCESS_CONTRACT_INVALID"
    SCHEDULE_INVALID = "SCHEDULE_INVALID"
    SCHEDULE_PROCESS_NOT_DEPLOYED = "SCHEDULE_PROCESS_NOT_DEPLOYED"
    SCHEDULE_NAME_RESERVED = "SCHEDULE_NAME_RESERVED"
    PROCESS_SCHEDULED = "PROCESS_SCHEDULED"
    # On a step's ledger row: the author's function broke its contract.
    WHEN_FAILED = "WHEN_FAILED"  # ``when`` threw
    BUILD_INVALID = (
        "BUILD_INVALID"  # ``build`` returned something other than { parent, lines? } or null
    )
    OUTSTANDING_INVALID = "OUTSTANDING_INVALID"  # ``eachRow.outstanding`` returned no query string
    # A ``ctx.query`` read was refused (the step's refusal carries the precise one).
    QUERY_REFUSED = "QUERY_REFUSED"
    QUERY_INVALID = "QUERY_INVALID"
    QUERY_ACCESS_CHANGED = "QUERY_ACCESS_CHANGED"
    QUERY_SLOT_TIMEOUT = "QUERY_SLOT_TIMEOUT"
    QUERY_TIMEOUT = "QUERY_TIMEOUT"
    # An AI step: its prompt, its provider, its answer (a provider's own refusal keeps its code).
    AI_PROMPT_INVALID = "AI_PROMPT_INVALID"  # ``ai.prompt`` returned something other than text
    AI_ANSWER_INVALID = "AI_ANSWER_INVALID"  # the answer does not fit ``ai.schema``
    AI_SCHEMA_UNUSABLE = "AI_SCHEMA_UNUSABLE"  # the deployed ``ai.schema`` cannot be applied
    AI_PROVIDER_UNREACHABLE = "AI_PROVIDER_UNREACHABLE"
    AI_PROVIDER_UNKNOWN = "AI_PROVIDER_UNKNOWN"
    # A task step (a person's decision): on its ledger row, and answered by /v1/tasks.
    # A sleep step whose function returned no duration ('30s', '15m', '2h', '30d').
    SLEEP_DURATION_INVALID = "SLEEP_DURATION_INVALID"
    TASK_REJECTED = "TASK_REJECTED"  # the assignee rejected it; the refusal carries the reason
    TASK_EXPIRED = "TASK_EXPIRED"  # its ``timeout`` came before anyone decided
    TASK_TITLE_INVALID = "TASK_TITLE_INVALID"  # ``task.title`` returned something other than text
    TASK_DETAILS_INVALID = "TASK_DETAILS_INVALID"  # ``task.details`` returned no object
    TASK_ASSIGNEE_UNKNOWN = "TASK_ASSIGNEE_UNKNOWN"  # no such active user, or no such group
    TASK_DECIDED = "TASK_DECIDED"  # completing or rejecting a task that is no longer open
    TASK_NOT_ASSIGNED = "TASK_NOT_ASSIGNED"  # an administrator acting on someone else's task
    TASK_BODY_INVALID = "TASK_BODY_INVALID"  # a complete or reject body, naming its field
    # Events (``POST /v1/events``) and a waitFor step waiting for one.
    BULK_INVALID = "BULK_INVALID"  # a bulk action's body or filter, naming the field
    BULK_ACTION_USED = "BULK_ACTION_USED"  # a bulk action already submitted or decided
    EVENT_INVALID = "EVENT_INVALID"  # the body's name, data or key, named
    EVENT_KEY_REUSED = "EVENT_KEY_REUSED"  # the sender's key came with another name or data
    WAIT_MATCH_INVALID = "WAIT_MATCH_INVALID"  # ``waitFor.match`` returned no object
    WAIT_CLOSED = "WAIT_CLOSED"  # the wait was closed (its run ended) before any event came
    # An invoke's Idempotency-Key (``processes.invoke_keys``).
    INVOKE_KEY_REUSED = "INVOKE_KEY_REUSED"  # the caller's key came with another process or input
    # The run history's purge (``processes.history``) and the run timeout (``processes.run_timeout``).
    HISTORY_PURGE_INVALID = "HISTORY_PURGE_INVALID"  # the purge body's dryRun or finishedBefore
    HISTORY_PURGE_RUNNING = "HISTORY_PURGE_RUNNING"  # another purge holds the purge lease
    HISTORY_ARCHIVE_UNWRITABLE = "HISTORY_ARCHIVE_UNWRITABLE"  # nothing was deleted
    # A run cancelled because it had not finished within processes.run_timeout_ms (its failure
    # code; lower case, as the setting's issue spells it).
    RUN_TIMEOUT = "run_timeout"
    # A local test run (``turbobase ext test processes/…``): a fixtures, events, verdicts or
    # expected-ledger file that does not fit the catalog or its own shape (the field is named).
    LOCAL_TEST_FILE_INVALID = "LOCAL_TEST_FILE_INVALID"


class ProcessError(StrEnum):
    """The top-level ``error`` of the processes room's answers. Never reused."""

    PROCESS_NOT_FOUND = "process_not_found"
    PROCESS_DISABLED = "process_disabled"
    PROCESS_IS_A_MIGRATION = "process_is_a_migration"
    PROCESS_RUN_NOT_FOUND = "process_run_not_found"
    PROCESS_RUN_NOT_RESUMABLE = "process_run_not_resumable"
    PROCESS_RUN_NOT_RETRYABLE = "process_run_not_retryable"
    PROCESS_RUN_NOT_ROLLBACKABLE = "process_run_not_rollbackable"
    PROCESS_RUN_NOT_REDRIVABLE = "process_run_not_redrivable"
    ILLEGAL_TRANSITION = "illegal_transition"
    INVALID_INPUT = "invalid_input"
    INPUT_SCHEMA_UNUSABLE = "input_schema_unusable"
    INVALID_MODE = "invalid_mode"
    IDEMPOTENCY_KEY_REUSED = "idempotency_key_reused"
    # ?mode=sync past its budget: not a failure, the answer names the run that goes on.
    SYNC_BUDGET_EXCEEDED = "sync_budget_exceeded"
    INVALID_SCHEDULE = "invalid_schedule"
    TASK_NOT_FOUND = "task_not_found"
    TASK_NOT_ASSIGNED = "task_not_assigned"
    TASK_DECIDED = "task_decided"
    INVALID_EVENT = "invalid_event"
    EVENT_KEY_REUSED = "event_key_reused"
    BULK_ACTION_NOT_FOUND = "bulk_action_not_found"
    BULK_ACTION_USED = "bulk_action_used"
    FOUR_EYES = "four_eyes"
    HISTORY_PURGE_RUNNING = "history_purge_running"
    HISTORY_ARCHIVE_UNWRITABLE = "history_archive_unwritable"
    QUERY_REFUSED = "query_refused"
    LOCAL_TEST_FILE_INVALID = "local_test_file_invalid"
