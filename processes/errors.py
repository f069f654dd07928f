"""Domain exceptions of the processes room, in the seed's bodies."""

from __future__ import annotations

from typing import Any

from kernel.errors import (
    AdminRequired,
    Conflict,
    Forbidden,
    InvalidRequest,
    NotFound,
    Refusal,
    TurbobaseError,
)
from processes.codes import ProcessCode, ProcessError


class ProcessNotFound(NotFound):
    """No deployed process of that id."""

    error = ProcessError.PROCESS_NOT_FOUND


class InputInvalid(InvalidRequest):
    """The body fails the process's input schema."""

    error = ProcessError.INVALID_INPUT
    code = ProcessCode.INPUT_INVALID


class InputSchemaUnusable(Refusal):
    """The deployed process's input schema cannot be applied to any input (it was stored before
    the deploy refused such schemas): redeploying the process is the fix, not another input."""

    error = ProcessError.INPUT_SCHEMA_UNUSABLE
    http_status = 409
    code = ProcessCode.INPUT_SCHEMA_UNUSABLE


class ModeInvalid(InvalidRequest):
    """?mode was neither sync nor async."""

    error = ProcessError.INVALID_MODE
    code = ProcessCode.INVALID_MODE


class ProcessDisabled(TurbobaseError):
    """The process, or every process on the instance, is switched off."""

    error = ProcessError.PROCESS_DISABLED
    http_status = 409
    code = ProcessCode.PROCESS_DISABLED

    def __init__(self, message: str, *, switch: str, **extra: Any) -> None:
        super().__init__(message, **extra)
        # The switch that says no (``processes.enabled``, or ``<id>.enabled``): a refused run's field.
        self.switch = switch

    def body(self) -> dict[str, Any]:
        return {"error": self.error, **self.extra}


class RunNotFound(NotFound):
    """No run of that id that you can see."""

    error = ProcessError.PROCESS_RUN_NOT_FOUND


class RunStateConflict(Conflict):
    """The run is not in a state that allows this; the body names the state, no rejection."""

    def body(self) -> dict[str, Any]:
        return {"error": self.error, "message": self.message, **self.extra}


class RunNotResumable(RunStateConflict):
    """Only a committed run with work outstanding can be resumed."""

    error = ProcessError.PROCESS_RUN_NOT_RESUMABLE
    code = ProcessCode.PROCESS_RUN_NOT_RESUMABLE


class ProcessIsMigration(RunStateConflict):
    """A migration is invoked again, not resumed."""

    error = ProcessError.PROCESS_IS_A_MIGRATION
    code = ProcessCode.PROCESS_IS_A_MIGRATION


class RunNotRetryable(RunStateConflict):
    """Only a run that ended failed, cancelled, rolled back or refused is retried."""

    error = ProcessError.PROCESS_RUN_NOT_RETRYABLE
    code = ProcessCode.PROCESS_RUN_NOT_RETRYABLE


class RunNotRedrivable(RunStateConflict):
    """Only a failed run whose steps were not rolled back is redriven."""

    error = ProcessError.PROCESS_RUN_NOT_REDRIVABLE
    code = ProcessCode.PROCESS_RUN_NOT_REDRIVABLE


class RedriveInvalid(InvalidRequest):
    """A redrive body is not ``{version?: 'current' | 'latest'}``; the field is named."""

    code = ProcessCode.REDRIVE_INVALID


class RunNotRollbackable(RunStateConflict):
    """A run still queued or running cannot be rolled back: cancel it first."""

    error = ProcessError.PROCESS_RUN_NOT_ROLLBACKABLE
    code = ProcessCode.PROCESS_RUN_NOT_ROLLBACKABLE


class TaskNotFound(NotFound):
    """No task of that id that is yours (or your group's); an administrator sees every task."""

    error = ProcessError.TASK_NOT_FOUND


class TaskNotAssigned(Forbidden):
    """An administrator may see every task but decide only their own and their groups'."""

    error = ProcessError.TASK_NOT_ASSIGNED


class TaskDecided(RunStateConflict):
    """The task is no longer open: decided, expired, or its run was cancelled."""

    error = ProcessError.TASK_DECIDED
    code = ProcessCode.TASK_DECIDED


class TaskBodyInvalid(InvalidRequest):
    """A complete or reject body is not what the verb takes; the field is named."""

    code = ProcessCode.TASK_BODY_INVALID


class EventInvalid(InvalidRequest):
    """An event body is not ``{name, data?, key?}`` as sent; the field is named, nothing kept."""

    error = ProcessError.INVALID_EVENT
    code = ProcessCode.EVENT_INVALID


class EventKeyReused(RunStateConflict):
    """The sender already sent an event with this key, with another name or other data."""

    error = ProcessError.EVENT_KEY_REUSED
    code = ProcessCode.EVENT_KEY_REUSED


class InvokeKeyReused(RunStateConflict):
    """The caller already invoked with this Idempotency-Key, for another process, mode or input."""

    error = ProcessError.IDEMPOTENCY_KEY_REUSED
    code = ProcessCode.INVOKE_KEY_REUSED


class InvokeForbidden(AdminRequired):
    """A token may invoke only with extensions:deploy and an administrator owner."""


class IllegalTransition(TurbobaseError):
    """A run cannot move between those states."""

    error = ProcessError.ILLEGAL_TRANSITION
    http_status = 409


class BulkInvalid(InvalidRequest):
    """A bulk action's body or filter is not one it takes; the field is named, nothing changes."""

    code = ProcessCode.BULK_INVALID


class BulkNotFound(NotFound):
    """No bulk action of that id that is yours (an administrator sees every one)."""

    error = ProcessError.BULK_ACTION_NOT_FOUND


class BulkUsed(RunStateConflict):
    """The bulk action was already submitted or decided: preview again for another."""

    error = ProcessError.BULK_ACTION_USED
    code = ProcessCode.BULK_ACTION_USED


class FourEyes(Forbidden):
    """A bulk action over the approval threshold needs another administrator's approval."""

    error = ProcessError.FOUR_EYES


class LocalTestFileInvalid(InvalidRequest):
    """A local test's fixtures, events, verdicts or test file does not fit; nothing ran."""

    error = ProcessError.LOCAL_TEST_FILE_INVALID
    code = ProcessCode.LOCAL_TEST_FILE_INVALID
