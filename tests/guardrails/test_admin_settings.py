"""Settings → Write guardrails: every instance setting, grouped; only what the operator changed is
written, all or nothing, each change audited."""

from __future__ import annotations

import pytest
from django.test import Client

from guardrails.models import InstanceSetting
from guardrails.registry import SETTINGS, SettingGroup
from guardrails.settings import setting_get, setting_set
from kernel.audit import AuditEvent
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

PAGE = "/admin/instance_settings/writeguardrail/"


def _name(key: str) -> str:
    return key.replace(".", "__")


def _shown_now(client: Client) -> dict[str, str]:
    """The form as the page shows it: every field with its hidden initial, as a browser posts it."""
    form = client.get(PAGE).context["form"]
    data = {}
    for name in form.fields:
        value = form[name].value() or ""
        data[name] = data[f"initial-{name}"] = str(value)
    return data


def _overrides() -> dict[str, int]:
    return dict(InstanceSetting.objects.values_list("key", "value"))


def test_the_page_lists_every_setting_grouped_with_default_bounds_and_description(operator):
    setting_set("guardrails.max_deletes_per_min", 5)
    res = operator.get(PAGE)
    assert res.status_code == 200
    groups = res.context["groups"]
    assert [g["name"] for g in groups] == [str(g) for g in SettingGroup]
    listed = [row["key"] for g in groups for row in g["rows"]]
    # Every fixed setting, then each per-source one for the catalog's source (guardrails.patterns).
    per_source = ["sources.netsuite.max_in_flight", "sources.netsuite.max_per_second"]
    assert sorted(listed) == sorted([spec.key for spec in SETTINGS] + per_source)
    rows = {row["key"]: row for g in groups for row in g["rows"]}
    first = rows["guardrails.max_deletes_per_min"]
    assert (first["default"], first["in_force"], first["is_overridden"], first["bounds"]) == (
        "60",
        "5",
        True,
        "0–2147483647",
    )
    assert (rows["processes.slice_max_ms"]["unit"], rows["processes.slice_max_ms"]["bounds"]) == (
        "ms",
        "1–2147483647",
    )
    page = res.content.decode()
    assert "Deletes apps and people may send in any minute; over it a delete is refused." in page
    assert '<h2 class="settings-group">Per-run ceilings</h2>' in page
    # A boolean is a select: default / on / off.
    assert '<select name="processes__enabled"' in page
    assert '<option value="off">off</option>' in page


def test_only_the_fields_changed_are_written_and_each_is_audited(operator):
    setting_set("guardrails.max_deletes_per_day", 9)
    data = _shown_now(operator)
    data[_name("guardrails.max_deletes_per_min")] = "7"
    data[_name("guardrails.max_deletes_per_day")] = ""  # emptied: back to the default
    data[_name("processes.enabled")] = "off"
    res = operator.post(PAGE, data, follow=True)
    assert [str(m) for m in res.context["messages"]] == [
        "3 setting(s) changed: guardrails.max_deletes_per_min, guardrails.max_deletes_per_day, processes.enabled"
    ]
    assert _overrides() == {"guardrails.max_deletes_per_min": 7, "processes.enabled": 0}
    assert setting_get("guardrails.max_deletes_per_day") == 5_000
    assert sorted(
        AuditEvent.objects.filter(actor_name="root").values_list("target", "before", "after")
    ) == [
        ("guardrails.max_deletes_per_day", 9, None),
        ("guardrails.max_deletes_per_min", None, 7),
        ("processes.enabled", None, 0),
    ]


def test_a_field_left_alone_is_never_reset_even_if_changed_meanwhile(operator):
    data = _shown_now(operator)  # the page as shown: max_deletes_per_min blank (default)
    setting_set("guardrails.max_deletes_per_min", 42)  # someone else sets it meanwhile
    data[_name("guardrails.max_deletes_per_hour")] = "500"
    res = operator.post(PAGE, data, follow=True)
    assert [str(m) for m in res.context["messages"]] == [
        "1 setting(s) changed: guardrails.max_deletes_per_hour"
    ]
    assert _overrides() == {
        "guardrails.max_deletes_per_min": 42,
        "guardrails.max_deletes_per_hour": 500,
    }


def test_saving_an_untouched_page_changes_nothing(operator):
    setting_set("processes.sync_budget_ms", 1_000)
    res = operator.post(PAGE, _shown_now(operator), follow=True)
    assert [str(m) for m in res.context["messages"]] == ["0 setting(s) changed"]
    assert _overrides() == {"processes.sync_budget_ms": 1_000}
    assert AuditEvent.objects.filter(actor_name="root").count() == 0


@pytest.mark.parametrize(
    ("key", "typed", "error"),
    [
        (
            "guardrails.max_deletes_per_min",
            "-1",
            "guardrails.max_deletes_per_min must be between 0 and 2147483647",
        ),
        (
            "guardrails.max_deletes_per_min",
            "5e",
            "guardrails.max_deletes_per_min must be a whole number, not '5e'",
        ),
        (
            "guardrails.max_deletes_per_min",
            "99999999999999999999",
            "guardrails.max_deletes_per_min must be a whole number, not '99999999999999999999'",
        ),
        (
            "guardrails.max_deletes_per_min",
            "1_200",
            "guardrails.max_deletes_per_min must be a whole number, not '1_200'",
        ),
        (
            "guardrails.max_deletes_per_min",
            "1,200",
            "guardrails.max_deletes_per_min must be a whole number, not '1,200'",
        ),
        (
            "processes.slice_max_rows",
            "0",
            "processes.slice_max_rows must be between 1 and 2147483647",
        ),
        (
            "processes.enabled",
            "maybe",
            "processes.enabled must be true or false, not the text 'maybe'",
        ),
    ],
)
def test_one_bad_value_changes_nothing_at_all_and_names_the_field(operator, key, typed, error):
    setting_set("guardrails.max_deletes_per_min", 7)
    data = _shown_now(operator)
    data[_name("guardrails.max_deletes_per_hour")] = "500"  # a good change beside the bad one
    data[_name(key)] = typed
    res = operator.post(PAGE, data)
    assert res.status_code == 200
    errors = res.context["form"].errors
    assert errors.keys() == {_name(key)}
    assert errors[_name(key)] == [error]
    assert error.replace("'", "&#x27;") in res.content.decode()
    assert _overrides() == {"guardrails.max_deletes_per_min": 7}
    assert AuditEvent.objects.filter(actor_name="root").count() == 0


def test_staff_who_may_only_view_cannot_save(db):
    from django.contrib.auth.models import Permission

    viewer = make_user("viewer")
    viewer.is_staff = True
    viewer.save()
    viewer.user_permissions.add(Permission.objects.get(codename="view_writeguardrail"))
    client = Client()
    client.force_login(viewer)
    res = client.get(PAGE)
    assert res.status_code == 200 and 'name="_save"' not in res.content.decode()
    assert client.post(PAGE, {_name("guardrails.max_deletes_per_min"): "1"}).status_code == 403
    assert _overrides() == {}


def _post(client: Client, key: str, value: str):
    data = _shown_now(client)
    data[_name(key)] = value
    return client.post(PAGE, data)


def test_a_per_source_limit_is_set_and_cleared_on_the_page(operator):
    key = "sources.netsuite.max_per_second"
    res = _post(operator, key, "0")
    assert res.status_code == 200 and key not in _overrides()  # 0 is refused: unset means no limit
    assert res.context["form"].errors[_name(key)] == [f"{key} must be between 1 and 100000"]
    assert _post(operator, key, "7").status_code == 302
    assert (_overrides()[key], setting_get(key)) == (7, 7)
    _post(operator, key, "")
    assert key not in _overrides() and setting_get(key) == 0
