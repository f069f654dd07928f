"""Durations as a process writes them: ``'30s'``, ``'15m'``, ``'2h'``, ``'7d'`` — a whole number and
one unit, nothing else, so a typo (``'7 days'``, ``'1.5h'``) is refused at deploy rather than read
as something the author did not mean."""

from __future__ import annotations

import re
from datetime import timedelta

UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
DURATION_MAX = timedelta(days=3650)  # ten years: longer is a typo, not a wait
_SHAPE = re.compile(r"^([0-9]{1,7})([smhd])$")


def duration_parse(text: object) -> timedelta:
    """The ``timedelta`` ``text`` names; ``ValueError`` saying what is wrong otherwise."""
    match = _SHAPE.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(
            f"must be a whole number and a unit, s, m, h or d (e.g. '30s', '7d'), not {text!r}"
        )
    value = timedelta(**{UNITS[match.group(2)]: int(match.group(1))})
    if value <= timedelta(0):
        raise ValueError("must be longer than nothing")
    if value > DURATION_MAX:
        raise ValueError(f"must be at most {DURATION_MAX.days} days")
    return value
