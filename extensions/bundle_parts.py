"""The parts of a bundle body that higher rooms own (``schedules``: the processes room).

The extensions room knows nothing of processes; a room that adds a key to the bundle body
registers a ``BundlePart`` for it at start-up, and ``extensions.bundle`` calls it at each stage.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol


class PlanChange(StrEnum):
    """What a bundle deploy does (or would do) to one module or one part's item."""

    NEW = "new"
    REPLACED = "replaced"
    UNCHANGED = "unchanged"
    REMOVED = "removed"


class BundlePart(Protocol):
    """A higher room's share of a bundle (the processes room registers ``schedules``).

    A part may also carry ``request_serializer`` (one item of its list in the body) and
    ``change_serializer`` (one item of what ``diff``/``apply`` answer): the OpenAPI schema
    documents the part with them (``extensions.serializers.BundlePartFields``).
    """

    key: str

    def parse(self, raw: Any) -> Any:
        """The part's own shape, before the database is read; raise a refusal naming the field."""

    def check(
        self, parsed: Any, *, modules_after: Mapping[str, str], removing: Collection[str], by: Any
    ) -> None:
        """Refuse unless the part (``parsed`` None: what is stored now) fits the modules the deploy
        leaves behind (``{id: kind}``) and ``by`` may deploy it."""

    def diff(self, parsed: Any) -> list[dict[str, Any]]:
        """What applying would change; each item has ``change`` and, if it runs a module, ``process``."""

    def apply(self, parsed: Any, *, by: Any, now: datetime) -> list[dict[str, Any]]:
        """Make the stored state equal ``parsed``; called inside the apply's transaction."""


_parts: dict[str, BundlePart] = {}


def bundle_part_register(part: BundlePart) -> None:
    """Add (or replace) the part that owns ``part.key`` of a bundle body."""
    _parts[part.key] = part


def bundle_parts() -> dict[str, BundlePart]:
    """The registered parts by key."""
    return dict(_parts)
