"""What a purge answers when it does not run: a bad body (400), another purge running (409), an
archive directory it cannot write (409, nothing deleted)."""

from __future__ import annotations

from kernel.codes import KernelError
from kernel.errors import Conflict, InvalidRequest
from processes.codes import ProcessCode, ProcessError


class PurgeInvalid(InvalidRequest):
    """The purge body is not valid; the field is named."""

    error = KernelError.INVALID_REQUEST
    code = ProcessCode.HISTORY_PURGE_INVALID


class PurgeRunning(Conflict):
    """Another purge is running; this one did nothing."""

    error = ProcessError.HISTORY_PURGE_RUNNING
    code = ProcessCode.HISTORY_PURGE_RUNNING


class ArchiveUnwritable(Conflict):
    """The archive directory cannot be written: the purge stopped before deleting anything more."""

    error = ProcessError.HISTORY_ARCHIVE_UNWRITABLE
    code = ProcessCode.HISTORY_ARCHIVE_UNWRITABLE
