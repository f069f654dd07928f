"""The sandbox source's numbering, and what it holds while it answers a run of writes.

Ids are minted per document type from a counter row (``PO-1041``, ``PO-1042``…): numbers survive
restarts and never repeat. A run (``SandboxAdapter.send_batch``) takes the numbers its creates
may need in one UPDATE and gives back the ones it did not use before it commits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import connection

from sources.models import SandboxCounter, SandboxDocument, SandboxScript

FIRST_NUMBER = 1041


def sandbox_mint(prefix: str) -> str:
    """The next id for ``prefix``; the counter is a row, so numbers survive restarts and never repeat."""
    return f"{prefix}-{numbers_take(prefix, 1)}"


def numbers_take(prefix: str, count: int) -> int:
    """Move ``prefix``'s counter on by ``count`` (negative: give back the last ones taken, in the
    transaction that took them); the first number taken."""
    # One UPDATE … RETURNING (PostgreSQL, SQLite ≥ 3.35): the counter's row lock is the mint.
    sql = (
        f"UPDATE {SandboxCounter._meta.db_table} SET next_number = next_number + %s"
        " WHERE prefix = %s RETURNING next_number"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [count, prefix])
        row = cursor.fetchone()
    if row is None:  # the prefix's first document: make its counter, then take from it
        SandboxCounter.objects.get_or_create(prefix=prefix, defaults={"next_number": FIRST_NUMBER})
        return numbers_take(prefix, count)
    return row[0] - count


@dataclass
class SandboxRun:
    """What one ``send_batch`` holds while it answers: the documents its creates already made
    (by idempotency key), the documents it makes (written together), the scripts it read."""

    earlier: dict[str, str]
    wanted: int  # creates of the run still to be numbered, at most
    made: list[SandboxDocument] = field(default_factory=list)
    scripts: dict[str, SandboxScript | None] = field(default_factory=dict)
    numbers: list[int] = field(default_factory=list)  # taken for the run, not yet handed out
    prefix: str = ""

    def mint(self, prefix: str) -> str:
        """The next id for ``prefix``: the run takes the numbers its creates may need at once,
        and gives back what it did not use (``finish``), holding the counter's row meanwhile."""
        if not self.numbers:
            count = max(self.wanted, 1)
            first = numbers_take(prefix, count)
            self.numbers, self.prefix = list(range(first, first + count)), prefix
        self.wanted -= 1
        return f"{prefix}-{self.numbers.pop(0)}"

    def flush(self) -> None:
        SandboxDocument.objects.bulk_create(self.made)
        self.made.clear()

    def finish(self) -> None:
        self.flush()
        if self.numbers:
            numbers_take(self.prefix, -len(self.numbers))
