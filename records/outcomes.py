"""What the write door answers: what a boundary call did, and what a source said to a write.

Both are values clients and other rooms read (``outcome`` in a write's answer picks its HTTP status;
a verdict's kind is sent with ``source_verdict``), so they are named once here and compared by
member, never by a bare string. Neither is a stored column: the stored states are in ``models``.
"""

from __future__ import annotations

from enum import StrEnum


class WriteOutcome(StrEnum):
    """What one boundary call did (``WriteResult.outcome``, the answer's ``outcome``)."""

    CREATED = "created"
    DUPLICATE = "duplicate"  # an idempotency key already used: the first record, nothing written
    UPDATED = "updated"
    DELETED = "deleted"  # an app-owned record, removed now
    QUEUED = "queued"  # a connected record's delete, hidden and on its way to the source
    HELD = "held"  # a connected record's delete, hidden and waiting for an operator
    SETTLED = "settled"  # a settle conflict linked to its upstream id


class VerdictKind(StrEnum):
    """A connected system's answer to one outbound write (an adapter's ``Outcome.kind``).

    ``records.verdicts.verdict_apply`` takes the three final kinds; ``TRANSIENT`` (no answer worth
    keeping) is counted by ``verdict_transient`` and the write is sent again.
    """

    CONFIRMED = "confirmed"  # applied upstream (a create also minted the upstream id)
    REFUSED = "refused"  # the source said no, in its own words: the write is parked
    SETTLE_CONFLICT = "settle_conflict"  # applied upstream, but linking its id back failed
    TRANSIENT = "transient"  # timeout, 5xx, connection refused: retried

    @property
    def is_final(self) -> bool:
        return self is not VerdictKind.TRANSIENT
