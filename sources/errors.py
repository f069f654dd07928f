"""Domain exceptions of the sources room.

Adapters raise these at their edge (``raise SourceUnavailable(...) from exc``) so a vendor's
exception never escapes into the worker; ``SourceAdapter.send`` turns them into outcomes.
"""

from __future__ import annotations

from kernel.errors import Refusal, TurbobaseError
from records.codes import RefusalCode
from sources.codes import SourceError


class SourceUnavailable(TurbobaseError):
    """The connected system did not answer; the write will be tried again."""

    error = SourceError.SOURCE_UNAVAILABLE
    http_status = 503
    retryable = True


class SourceSlowDown(SourceUnavailable):
    """The connected system asked us to slow down (429/503, maybe with Retry-After) or timed out.

    Every write to that source waits (``sources.pacing``), not only this one: the source is
    saying it is overloaded, and hammering it from another record type's lane would not help.
    """

    error = SourceError.SOURCE_SLOW_DOWN

    def __init__(self, message: str | None = None, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after  # seconds the source asked for; None: our own backoff


class SourceRefused(Refusal):
    """The connected system refused the write."""

    code = RefusalCode.SOURCE_REFUSED


class AdapterNotFound(TurbobaseError):
    """The catalog names an adapter this instance does not have."""

    error = SourceError.ADAPTER_NOT_FOUND
    http_status = 500
