"""What a purge answers when it does not run: a bad body (400), another purge running (409), an
archive directory it cannot write (409, nothing deleted)."""

from __future__ import annotations

from kernel.errors import Conflict, InvalidRequest
from processes.codes import ProcessCode


class PurgeInvalid(InvalidRequest):
    """The purge body is not valid; the field is named."""

    error = "invalid_request"
    code = ProcessCode.HISTORY_PURGE_INVALID


class PurgeRunning(Conflict):
    """Another purge is running; this one did nothing."""

    error = "history_purge_running"
    code = ProcessCode.HISTORY_PURGE_RUNNING


class ArchiveUnwritable(Conflict):
    """The archive directory cannot be written: the purge stopped before deleting anything more."""

    error = "history_archive_unwritable"
    code = ProcessCode.HISTORY_ARCHIVE_UNWRITABLE
