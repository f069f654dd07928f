"""Rolling delete windows: the ordinary and the rollback window, with explicit clocks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction

from guardrails.models import InstanceSetting, WindowEvent
from guardrails.registry import SettingInvalid
from guardrails.settings import DEFAULTS, setting_get, setting_set
from guardrails.windows import window_admit

pytestmark = pytest.mark.django_db

T0 = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)
SECOND = timedelta(seconds=1)


def _admit(kind: str, at: datetime, source: str = "netsuite"):
    return window_admit(kind=kind, source_system=source, now=at)


def test_shipped_defaults_are_the_seeds():
    assert {k: v for k, v in DEFAULTS.items() if k.startswith("guardrails.")} == {
        "guardrails.max_deletes_per_min": 60,
        "guardrails.max_deletes_per_hour": 1_000,
        "guardrails.max_deletes_per_day": 5_000,
        "guardrails.max_rollback_deletes_per_min": 600,
        "guardrails.max_rollback_deletes_per_hour": 10_000,
        "guardrails.max_rollback_deletes_per_day": 50_000,
    }
    setting_set("guardrails.max_deletes_per_min", 7)
    assert setting_get("guardrails.max_deletes_per_min") == 7
    assert setting_get("guardrails.max_deletes_per_hour") == 1_000


def test_unknown_or_negative_setting_refused():
    with pytest.raises(
        SettingInvalid, match="'guardrails.max_everything' is not an instance setting"
    ):
        setting_set("guardrails.max_everything", 1)
    with pytest.raises(
        SettingInvalid, match="guardrails.max_deletes_per_min must be between 0 and"
    ):
        setting_set("guardrails.max_deletes_per_min", -1)
    assert not InstanceSetting.objects.exists()


@pytest.mark.parametrize(
    "kind, span, length",
    [
        ("delete", "min", timedelta(minutes=1)),
        ("delete", "hour", timedelta(hours=1)),
        ("delete", "day", timedelta(days=1)),
        ("rollback", "min", timedelta(minutes=1)),
        ("rollback", "hour", timedelta(hours=1)),
        ("rollback", "day", timedelta(days=1)),
    ],
)
def test_full_window_frees_when_its_oldest_needed_charge_ages_out(kind, span, length):
    prefix = "max_deletes" if kind == "delete" else "max_rollback_deletes"
    key = f"guardrails.{prefix}_per_{span}"
    setting_set(key, 3)
    step = length / 10
    charges = [T0, T0 + step, T0 + 2 * step]
    for at in charges:
        assert _admit(kind, at).admitted
    blocked = _admit(kind, T0 + 3 * step)
    assert (blocked.admitted, blocked.cap, blocked.limit) == (False, key, 3)
    assert blocked.retry_at == T0 + length
    assert not _admit(kind, T0 + length - SECOND).admitted
    assert _admit(kind, T0 + length).admitted  # exactly when the oldest charge ages out
    assert WindowEvent.objects.filter(kind=kind).count() == 4  # refusals charge nothing


def test_lowered_cap_waits_for_the_charge_that_keeps_it_full():
    for n in range(3):
        assert _admit("delete", T0 + n * 10 * SECOND).admitted
    setting_set("guardrails.max_deletes_per_min", 2)
    blocked = _admit("delete", T0 + 30 * SECOND)
    # Two charges must age out of three: the second (T0+10s) is the one that keeps it full.
    assert blocked.retry_at == T0 + 10 * SECOND + timedelta(minutes=1)
    assert not _admit("delete", T0 + 69 * SECOND).admitted
    assert _admit("delete", T0 + 70 * SECOND).admitted


def test_the_tightest_window_is_named():
    setting_set("guardrails.max_deletes_per_hour", 2)
    setting_set("guardrails.max_deletes_per_day", 3)
    assert _admit("delete", T0).admitted
    assert _admit("delete", T0 + timedelta(minutes=10)).admitted
    blocked = _admit("delete", T0 + timedelta(minutes=20))
    assert (blocked.cap, blocked.retry_at) == (
        "guardrails.max_deletes_per_hour",
        T0 + timedelta(hours=1),
    )
    assert _admit("delete", T0 + timedelta(hours=1, minutes=5)).admitted
    blocked = _admit("delete", T0 + timedelta(hours=3))
    assert (blocked.cap, blocked.retry_at) == (
        "guardrails.max_deletes_per_day",
        T0 + timedelta(days=1),
    )


def test_rollback_window_is_separate_from_the_ordinary_one():
    setting_set("guardrails.max_deletes_per_min", 1)
    setting_set("guardrails.max_rollback_deletes_per_min", 2)
    assert _admit("delete", T0).admitted
    assert not _admit("delete", T0 + SECOND).admitted
    # The full ordinary window does not stop a rollback, and rollback charges never fill it.
    assert _admit("rollback", T0 + SECOND).admitted
    assert _admit("rollback", T0 + 2 * SECOND).admitted
    blocked = _admit("rollback", T0 + 3 * SECOND)
    assert (blocked.admitted, blocked.cap, blocked.retry_at) == (
        False,
        "guardrails.max_rollback_deletes_per_min",
        T0 + SECOND + timedelta(minutes=1),
    )
    assert _admit("delete", T0 + timedelta(minutes=1)).admitted
    assert sorted(WindowEvent.objects.values_list("kind", flat=True)) == [
        "delete",
        "delete",
        "rollback",
        "rollback",
    ]


def test_windows_are_per_source_system():
    setting_set("guardrails.max_deletes_per_min", 1)
    assert _admit("delete", T0, "netsuite").admitted
    assert _admit("delete", T0, "salesforce").admitted
    assert not _admit("delete", T0, "netsuite").admitted


def test_check_without_charge_charges_nothing():
    setting_set("guardrails.max_deletes_per_min", 1)
    assert window_admit(kind="delete", source_system="netsuite", now=T0, charge=False).admitted
    assert WindowEvent.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_admission_must_run_inside_the_deletes_transaction():
    assert not transaction.get_connection().in_atomic_block
    with pytest.raises(RuntimeError, match="inside the delete's transaction"):
        _admit("delete", T0)
    assert WindowEvent.objects.count() == 0
