"""Cron read in the schedule's own time zone (croniter for the fields, zoneinfo for the clock).

croniter walks *wall-clock* times; we resolve each one to an instant in the schedule's zone
ourselves, because the two days a year the wall clock jumps are where cron libraries disagree.
The rule, the one RFC 5545 and java.time use:

- **A wall time that does not exist** (spring forward: 02:30 in Europe/Berlin on the last Sunday
  of March) is read with the offset in force *before* the jump, so it fires the length of the gap
  later — 03:30 CEST. The job still runs that day, once, an hour late, rather than being dropped
  (a nightly job silently missing a night is the worse surprise) or bunched at 03:00 with others.
- **A wall time that happens twice** (fall back: 02:30 on the last Sunday of October) fires at
  its *first* occurrence only (02:30 CEST). A wall time fires at most once a day; an hourly
  ``30 * * * *`` therefore has one two-hour gap that night rather than a double firing.

Only five-field expressions (minute hour day-of-month month day-of-week) and the ``@hourly``-style
aliases are accepted: croniter's optional seconds and year fields would silently change what a
five-field reader expects, and a per-minute ticker cannot honour seconds anyway.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from croniter.croniter import CroniterError

# The largest jump a zone's wall clock makes (DST, or a zone changing its standard offset).
MAX_CLOCK_JUMP = timedelta(hours=3)
# A valid expression that matches nothing for this long (0 0 30 2 *) is refused at deploy.
MAX_SEARCH_CANDIDATES = 100_000
ALIASES = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


class CronInvalid(ValueError):
    """The expression or the time zone cannot be read; ``str()`` says why."""


def zone_get(name: str) -> ZoneInfo:
    """The IANA zone ``name`` (``Europe/Berlin``, ``UTC``), or ``CronInvalid``."""
    if not isinstance(name, str) or not name.strip():
        raise CronInvalid("the time zone must be an IANA name such as 'UTC' or 'Europe/Berlin'")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise CronInvalid(
            f"{name!r} is not a time zone this instance knows (an IANA name such as "
            "'Europe/Berlin')"
        ) from exc


def expr_check(expr: str) -> None:
    """Raise ``CronInvalid`` unless ``expr`` is a five-field cron expression croniter can walk."""
    if not isinstance(expr, str) or not expr.strip():
        raise CronInvalid("the cron expression must be a string such as '0 2 * * *'")
    text = expr.strip()
    if not text.startswith("@") and len(text.split()) != 5:
        raise CronInvalid(
            f"{expr!r} is not a five-field cron expression (minute hour day month weekday)"
        )
    if text.startswith("@") and text.lower() not in ALIASES:
        raise CronInvalid(f"{expr!r} is not a cron alias ({', '.join(ALIASES)})")
    try:
        croniter(text, datetime(2000, 1, 1)).get_next(datetime)
    except (CroniterError, ValueError, KeyError) as exc:
        raise CronInvalid(f"{expr!r} is not a valid cron expression: {exc}") from exc


def wall_resolve(wall: datetime, zone: ZoneInfo) -> datetime:
    """The instant (UTC) a naive wall time ``wall`` names in ``zone``, by the rule above."""
    # fold=0 is the first occurrence of a repeated time, and for a time in a gap it applies the
    # offset from before the gap — exactly the two halves of the rule.
    return wall.replace(tzinfo=zone, fold=0).astimezone(UTC)


def cron_next(expr: str, tz: str, *, after: datetime) -> datetime:
    """The first instant strictly after ``after`` at which ``expr`` fires, read in zone ``tz``.

    Wall times are walked from ``MAX_CLOCK_JUMP`` before ``after``'s own wall time, because a
    wall time that earlier can resolve (through a gap) to an instant later than ``after``; the
    walk then looks ``MAX_CLOCK_JUMP`` past the first hit for an earlier instant, because the
    resolution is not monotonic across a gap.
    """
    if after.tzinfo is None:
        raise ValueError("after must be timezone-aware")
    zone = zone_get(tz)
    expr_check(expr)
    start = after.astimezone(zone).replace(tzinfo=None) - MAX_CLOCK_JUMP
    walker = croniter(expr.strip(), start)
    best: datetime | None = None
    best_wall: datetime | None = None
    for _ in range(MAX_SEARCH_CANDIDATES):
        wall = walker.get_next(datetime)
        if best is not None and best_wall is not None and wall > best_wall + MAX_CLOCK_JUMP:
            return best
        instant = wall_resolve(wall, zone)
        if instant > after and (best is None or instant < best):
            best, best_wall = instant, best_wall or wall
    if best is not None:
        return best
    raise CronInvalid(f"{expr!r} does not fire within the next {MAX_SEARCH_CANDIDATES} candidates")
