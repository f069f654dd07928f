"""The typed settings registry: every setting declared once, every bad value refused by key."""

from __future__ import annotations

import pytest

from guardrails.models import InstanceSetting
from guardrails.registry import REGISTRY, SETTINGS, SettingInvalid, SettingType, setting_spec
from guardrails.settings import DEFAULTS, setting_clear, setting_get, setting_set


def test_every_setting_is_declared_once_with_a_description_and_sane_bounds() -> None:
    assert len(REGISTRY) == len(SETTINGS)
    for spec in SETTINGS:
        assert spec.description.endswith("."), spec.key
        assert spec.min <= spec.default <= spec.max or spec.default == 0, spec.key
    assert DEFAULTS["processes.slice_max_rows"] == 500  # the seed's shipped defaults
    assert DEFAULTS["processes.slice_max_ms"] == 600_000
    assert DEFAULTS["processes.slice_cap"] == 1000
    assert DEFAULTS["guardrails.max_deletes_per_hour"] == 1_000


@pytest.mark.parametrize(
    "key, raw, stored",
    [
        ("guardrails.max_deletes_per_min", 90, 90),
        ("processes.enabled", False, 0),
        ("processes.enabled", True, 1),
        ("processes.slice_max_ms", 1, 1),
    ],
)
def test_good_values_parse(key: str, raw: object, stored: int) -> None:
    assert setting_spec(key).parse(raw) == stored


@pytest.mark.parametrize(
    "key, raw, message",
    [
        ("guardrails.max_deletes_per_min", "90", "must be a whole number"),
        ("guardrails.max_deletes_per_min", " 1_200 ", "must be a whole number"),
        ("guardrails.max_deletes_per_min", "5e", "must be a whole number"),
        ("guardrails.max_deletes_per_min", 2**40, "must be between 0 and 2147483647"),
        ("guardrails.max_deletes_per_min", 1.5, "must be a whole number"),
        ("guardrails.max_deletes_per_min", 10.0, "must be a whole number"),
        ("guardrails.max_deletes_per_min", True, "must be a whole number"),
        ("guardrails.max_deletes_per_min", None, "must be a whole number"),
        ("processes.slice_max_rows", 0, "must be between 1 and"),
        ("processes.enabled", 2, "must be true or false"),
        ("processes.enabled", 1, "must be true or false"),
        ("processes.enabled", "true", "must be true or false"),
        ("processes.enabled", "maybe", "must be true or false"),
    ],
)
def test_bad_values_are_refused_naming_the_key(key: str, raw: object, message: str) -> None:
    with pytest.raises(SettingInvalid, match=message) as caught:
        setting_spec(key).parse(raw)
    assert caught.value.body()["rejection"]["field"] == key
    assert caught.value.body()["error"] == "invalid_setting"


@pytest.mark.parametrize(
    "key, text, stored",
    [
        ("guardrails.max_deletes_per_min", "1200", 1200),
        ("guardrails.max_deletes_per_min", "007", 7),
        ("processes.enabled", "true", 1),
        ("processes.enabled", "false", 0),
    ],
)
def test_an_operators_text_parses_strictly(key: str, text: str, stored: int) -> None:
    assert setting_spec(key).parse_text(text) == stored


@pytest.mark.parametrize(
    "key, text",
    [
        ("guardrails.max_deletes_per_min", "1_200"),
        ("guardrails.max_deletes_per_min", "1,200"),
        ("guardrails.max_deletes_per_min", "+5"),
        ("guardrails.max_deletes_per_min", "1e3"),
        ("guardrails.max_deletes_per_min", "١٢"),  # digits, but not ASCII ones
        ("processes.enabled", "on"),
        ("processes.enabled", "1"),
        ("processes.enabled", "True"),
    ],
)
def test_any_other_text_is_refused_naming_the_key(key: str, text: str) -> None:
    with pytest.raises(SettingInvalid) as caught:
        setting_spec(key).parse_text(text)
    assert caught.value.field == key


def test_python_callers_pass_the_stored_form_never_text() -> None:
    assert setting_spec("processes.enabled").check(0) == 0
    assert setting_spec("processes.enabled").check(True) == 1
    assert setting_spec("processes.slice_max_rows").check(50) == 50
    for key, value in (("processes.enabled", "off"), ("processes.slice_max_rows", "50")):
        with pytest.raises(SettingInvalid):
            setting_spec(key).check(value)  # type: ignore[arg-type]


@pytest.mark.django_db
def test_a_refused_value_changes_nothing_and_clear_restores_the_default() -> None:
    setting_set("guardrails.max_deletes_per_min", 7)
    with pytest.raises(SettingInvalid):
        setting_set("guardrails.max_deletes_per_min", "5e")
    assert setting_get("guardrails.max_deletes_per_min") == 7
    setting_clear("guardrails.max_deletes_per_min")
    assert setting_get("guardrails.max_deletes_per_min") == 60
    assert not InstanceSetting.objects.exists()


def test_types_cover_every_setting() -> None:
    assert {spec.type for spec in SETTINGS} <= set(SettingType)
    assert REGISTRY["processes.enabled"].type is SettingType.BOOLEAN
