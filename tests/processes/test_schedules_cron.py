"""Cron in the schedule's time zone: the next due instant, and the two days a year the clock jumps."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from processes.schedules.cron import CronInvalid, cron_next, expr_check, zone_get

BERLIN = ZoneInfo("Europe/Berlin")


def _walk(expr: str, tz: str, start: datetime, count: int) -> list[str]:
    """The next ``count`` due instants after ``start``, as local wall-clock ISO strings."""
    found, at = [], start
    for _ in range(count):
        at = cron_next(expr, tz, after=at)
        found.append(at.astimezone(ZoneInfo(tz)).isoformat())
    return found


def test_next_is_read_in_the_schedules_zone_and_answered_in_utc():
    after = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
    assert cron_next("0 2 * * *", "UTC", after=after) == datetime(2026, 7, 2, 2, 0, tzinfo=UTC)
    # 02:00 in Berlin in July is 00:00 UTC (CEST, +2).
    assert cron_next("0 2 * * *", "Europe/Berlin", after=after) == datetime(
        2026, 7, 2, 0, 0, tzinfo=UTC
    )
    assert cron_next("0 2 * * *", "America/New_York", after=after) == datetime(
        2026, 7, 2, 6, 0, tzinfo=UTC
    )


def test_next_is_strictly_after_the_instant_given():
    at = datetime(2026, 7, 2, 2, 0, tzinfo=UTC)
    assert cron_next("0 2 * * *", "UTC", after=at) == datetime(2026, 7, 3, 2, 0, tzinfo=UTC)


def test_spring_forward_a_skipped_wall_time_fires_once_the_gap_later():
    # 2026-03-29 Europe/Berlin: 02:00 CET jumps to 03:00 CEST, so 02:30 does not exist that day.
    start = datetime(2026, 3, 27, 12, 0, tzinfo=UTC)
    assert _walk("30 2 * * *", "Europe/Berlin", start, 4) == [
        "2026-03-28T02:30:00+01:00",
        "2026-03-29T03:30:00+02:00",  # read with the offset before the gap: once, an hour late
        "2026-03-30T02:30:00+02:00",
        "2026-03-31T02:30:00+02:00",
    ]


def test_spring_forward_several_skipped_times_never_bunch_or_repeat():
    start = datetime(2026, 3, 28, 23, 0, tzinfo=UTC)
    walked = _walk("*/20 2 * * *", "Europe/Berlin", start, 5)
    assert walked == [
        "2026-03-29T03:00:00+02:00",
        "2026-03-29T03:20:00+02:00",
        "2026-03-29T03:40:00+02:00",
        "2026-03-30T02:00:00+02:00",
        "2026-03-30T02:20:00+02:00",
    ]
    assert len(set(walked)) == len(walked)


def test_fall_back_a_repeated_wall_time_fires_once_at_its_first_occurrence():
    # 2026-10-25 Europe/Berlin: 03:00 CEST falls back to 02:00 CET, so 02:30 happens twice.
    start = datetime(2026, 10, 23, 12, 0, tzinfo=UTC)
    assert _walk("30 2 * * *", "Europe/Berlin", start, 4) == [
        "2026-10-24T02:30:00+02:00",
        "2026-10-25T02:30:00+02:00",  # the first 02:30 (CEST) only
        "2026-10-26T02:30:00+01:00",
        "2026-10-27T02:30:00+01:00",
    ]
    # Asked from inside the repeated hour (02:10 CET, after the first 02:30 fired), the answer is
    # the next day: the second 02:30 is not a second firing.
    inside = datetime(2026, 10, 25, 2, 10, tzinfo=BERLIN).replace(fold=1)
    assert cron_next("30 2 * * *", "Europe/Berlin", after=inside.astimezone(UTC)) == datetime(
        2026, 10, 26, 1, 30, tzinfo=UTC
    )


def test_fall_back_an_hourly_schedule_fires_each_wall_time_once():
    start = datetime(2026, 10, 24, 22, 0, tzinfo=UTC)
    assert _walk("30 * * * *", "Europe/Berlin", start, 4) == [
        "2026-10-25T00:30:00+02:00",
        "2026-10-25T01:30:00+02:00",
        "2026-10-25T02:30:00+02:00",
        "2026-10-25T03:30:00+01:00",
    ]


@pytest.mark.parametrize(
    "expr",
    ["61 * * * *", "0 0 * * * *", "0 2 * *", "@nope", "H * * * *", "", "0 0 30 2 *", "not cron"],
)
def test_bad_expressions_are_refused(expr):
    with pytest.raises(CronInvalid):
        expr_check(expr)


@pytest.mark.parametrize("expr", ["0 2 * * *", "*/5 * * * 1-5", "@daily", "@hourly", "0 0 1 1,7 *"])
def test_good_expressions_pass(expr):
    expr_check(expr)


@pytest.mark.parametrize("tz", ["Mars/Olympus", "", "../etc/passwd", 5])
def test_unknown_time_zones_are_refused(tz):
    with pytest.raises(CronInvalid):
        zone_get(tz)
