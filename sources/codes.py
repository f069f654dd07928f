"""Codes the sources room adds to the records room's refusal codes. Never reused for another meaning.

A source that refuses without a code of its own gets ``records.codes.RefusalCode.SOURCE_REFUSED``;
the reason code of a failed attempt is ``RefusalCode.TRANSIENT`` (``records.verdicts`` writes it).
"""

from __future__ import annotations

from enum import StrEnum


class SourceCode(StrEnum):
    # The upstream document the write addresses does not exist (or is already deleted) there.
    SOURCE_RECORD_MISSING = "SOURCE_RECORD_MISSING"
    # An update or delete whose record has no upstream id: its create was refused or awaits settle.
    SOURCE_NOT_LINKED = "SOURCE_NOT_LINKED"
    # The source answered in a shape the connector cannot read; parked so nobody re-sends blindly.
    SOURCE_ANSWER_INVALID = "SOURCE_ANSWER_INVALID"


class SourceError(StrEnum):
    """The top-level ``error`` of the sources room's answers. Never reused."""

    SOURCE_UNAVAILABLE = "source_unavailable"
    ADAPTER_NOT_FOUND = "adapter_not_found"
    SOURCE_SLOW_DOWN = "source_slow_down"
