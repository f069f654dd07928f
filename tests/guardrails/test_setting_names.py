"""Settings names: every key a ``SettingKey``, the old upper-case names kept as aliases for one
release (the API, the CLI, the admin and the Django-settings fallback answer the new name), the
stored rows renamed by a migration, and no room reading a setting around the registry."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
from django.apps import apps

from guardrails.models import InstanceSetting
from guardrails.registry import REGISTRY, SETTINGS, SettingInvalid, setting_spec
from guardrails.setting_keys import SETTING_ALIASES, SettingKey
from guardrails.settings import setting_clear, setting_get, setting_set, settings_overridden
from kernel.audit import AuditEvent
from kernel.models import token_issue
from tests.conftest import cli, make_user

ROOT = Path(__file__).resolve().parents[2]
ROOMS = ("kernel", "extensions", "guardrails", "records", "sources", "processes", "turbobase")
ACCESSOR = ROOT / "kernel" / "deployment.py"
SETTING_CALLS = {"setting_get", "setting_set", "setting_clear", "settings_overridden"}
RENAMED = {
    "PROCESS_SLICE_MAX_ROWS": "processes.slice_max_rows",
    "PROCESS_SLICE_BATCH_ROWS": "processes.slice_batch_rows",
    "PROCESS_SLICE_MAX_MS": "processes.slice_max_ms",
    "PROCESS_QUEUE_MAX_RUNS": "processes.queue_max_runs",
}


def _by_key(body: dict) -> dict[str, dict]:
    return {row["key"]: row for row in body["settings"]}


# -- the registry ---------------------------------------------------------------------------------


def test_every_registry_key_is_a_setting_key_and_every_setting_key_is_declared():
    assert all(type(spec.key) is SettingKey for spec in SETTINGS)
    assert set(REGISTRY) == set(SettingKey)
    assert len(SETTINGS) == len(SettingKey)  # no key declared twice


def test_every_key_is_dotted_lower_case_and_the_old_names_map_to_the_new():
    assert [key for key in SettingKey if key != key.lower() or "." not in key] == []
    assert {old: str(new) for old, new in SETTING_ALIASES.items()} == RENAMED
    assert not set(SETTING_ALIASES) & set(SettingKey)


def test_an_old_name_is_its_new_ones_declaration_and_an_unknown_name_is_refused():
    assert setting_spec("PROCESS_SLICE_MAX_ROWS") is REGISTRY[SettingKey.PROCESSES_SLICE_MAX_ROWS]
    with pytest.raises(SettingInvalid) as refused:
        setting_spec("PROCESS_SLICE_MAX_ROWZ")
    assert refused.value.field == "PROCESS_SLICE_MAX_ROWZ"


# -- Python callers -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_set_and_clear_by_an_old_name_store_and_audit_the_new_one():
    setting_set("PROCESS_SLICE_BATCH_ROWS", 7)  # type: ignore[arg-type]  # as an old caller would
    assert list(InstanceSetting.objects.values_list("key", "value")) == [
        ("processes.slice_batch_rows", 7)
    ]
    assert setting_get(SettingKey.PROCESSES_SLICE_BATCH_ROWS) == 7
    assert setting_get("PROCESS_SLICE_BATCH_ROWS") == 7  # type: ignore[arg-type]
    setting_clear("PROCESS_SLICE_BATCH_ROWS")  # type: ignore[arg-type]
    assert not InstanceSetting.objects.exists()
    targets = list(AuditEvent.objects.order_by("id").values_list("target", flat=True))
    assert targets == ["processes.slice_batch_rows", "processes.slice_batch_rows"]


@pytest.mark.django_db
def test_an_override_by_an_old_name_reads_as_the_new_one():
    with settings_overridden({"PROCESS_SLICE_MAX_ROWS": 5}):  # type: ignore[dict-item]
        assert setting_get(SettingKey.PROCESSES_SLICE_MAX_ROWS) == 5
    assert setting_get(SettingKey.PROCESSES_SLICE_MAX_ROWS) == 500


@pytest.mark.django_db
def test_the_django_settings_fallback_reads_the_new_upper_name_then_the_old(settings):
    key = SettingKey.PROCESSES_QUEUE_MAX_RUNS
    assert setting_get(key) == 500
    settings.PROCESS_QUEUE_MAX_RUNS = 3  # a deployment still on the old name
    assert setting_get(key) == 3
    settings.PROCESSES_QUEUE_MAX_RUNS = 4  # the new name wins over the old
    assert setting_get(key) == 4
    setting_set(key, 9)  # and a stored row over both
    assert setting_get(key) == 9


# -- the API --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_api_changes_a_setting_by_its_old_name_and_answers_the_new_one(admin_api):
    res = admin_api.patch("/v1/settings", {"PROCESS_SLICE_MAX_MS": 1234}, format="json")
    assert res.status_code == 200
    rows = _by_key(res.json())
    assert "PROCESS_SLICE_MAX_MS" not in rows
    assert rows["processes.slice_max_ms"]["value"] == 1234
    assert list(InstanceSetting.objects.values_list("key", "value")) == [
        ("processes.slice_max_ms", 1234)
    ]
    res = admin_api.patch("/v1/settings", {"PROCESS_SLICE_MAX_MS": None}, format="json")
    assert _by_key(res.json())["processes.slice_max_ms"]["value"] == 600_000
    assert not InstanceSetting.objects.exists()


@pytest.mark.django_db
def test_the_api_refuses_a_bad_value_by_an_old_name_with_the_new_name(admin_api):
    res = admin_api.patch("/v1/settings", {"PROCESS_SLICE_MAX_ROWS": 0}, format="json")
    assert res.status_code == 400
    body = res.json()
    assert body["error"] == "invalid_setting"
    assert body["rejection"]["field"] == "processes.slice_max_rows"
    assert body["rejection"]["message"].startswith("processes.slice_max_rows must be between 1")
    assert not InstanceSetting.objects.exists()


@pytest.mark.django_db
def test_the_api_refuses_one_setting_named_twice_and_changes_nothing(admin_api):
    change = {"PROCESS_SLICE_MAX_ROWS": 5, "processes.slice_max_rows": 6}
    res = admin_api.patch("/v1/settings", change, format="json")
    assert res.status_code == 400
    assert res.json()["rejection"]["message"] == (
        "processes.slice_max_rows is named twice (once by an old name)"
    )
    assert not InstanceSetting.objects.exists()


# -- the admin ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_admin_shows_the_old_name_and_a_post_by_it_changes_the_new_one(operator):
    page = "/admin/instance_settings/writeguardrail/"
    res = operator.get(page)
    assert "formerly <code>PROCESS_SLICE_MAX_ROWS</code>" in res.content.decode()
    res = operator.post(
        page, {"PROCESS_SLICE_MAX_ROWS": "42", "initial-PROCESS_SLICE_MAX_ROWS": ""}
    )
    assert res.status_code == 302
    assert list(InstanceSetting.objects.values_list("key", "value")) == [
        ("processes.slice_max_rows", 42)
    ]


# -- the CLI --------------------------------------------------------------------------------------


@pytest.fixture
def instance(live_server, monkeypatch):
    owner = make_user("ops", admin=True)
    monkeypatch.setenv("TURBOBASE_URL", live_server.url + "/")
    monkeypatch.setenv("TURBOBASE_TOKEN", token_issue(user=owner, scopes=["extensions:deploy"])[1])
    return owner


def test_the_cli_reads_and_writes_by_an_old_name_and_answers_the_new_one(instance, capsys):
    code, out, _ = cli(capsys, "settings", "set", "PROCESS_QUEUE_MAX_RUNS", "25")
    assert (code, out) == (0, "processes.queue_max_runs = 25 (default 500)\n")
    code, out, _ = cli(capsys, "settings", "get", "PROCESS_QUEUE_MAX_RUNS")
    assert code == 0
    assert out.splitlines()[0] == "processes.queue_max_runs = 25 (default 500)"
    code, out, _ = cli(capsys, "settings", "unset", "PROCESS_QUEUE_MAX_RUNS")
    assert (code, out) == (0, "processes.queue_max_runs = 500\n")
    assert not InstanceSetting.objects.exists()


# -- the data migration ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_migration_renames_stored_rows_and_the_new_name_wins():
    migration = importlib.import_module("guardrails.migrations.0003_setting_names")
    InstanceSetting.objects.create(key="PROCESS_SLICE_MAX_ROWS", value=50)
    InstanceSetting.objects.create(key="PROCESS_SLICE_MAX_MS", value=1_000)
    InstanceSetting.objects.create(key="processes.slice_max_ms", value=2_000)  # already renamed
    InstanceSetting.objects.create(key="processes.enabled", value=0)
    migration.names_dotted(apps, None)
    assert dict(InstanceSetting.objects.values_list("key", "value")) == {
        "processes.slice_max_rows": 50,
        "processes.slice_max_ms": 2_000,
        "processes.enabled": 0,
    }
    migration.names_upper(apps, None)  # and back, for a rollback of the release
    assert dict(InstanceSetting.objects.values_list("key", "value")) == {
        "PROCESS_SLICE_MAX_ROWS": 50,
        "PROCESS_SLICE_MAX_MS": 2_000,
        "processes.enabled": 0,
    }
    assert migration.RENAMED == RENAMED


# -- no way around the registry -------------------------------------------------------------------


def _room_trees() -> list[tuple[Path, ast.AST]]:
    files = sorted(
        path
        for room in ROOMS
        for path in (ROOT / room).rglob("*.py")
        if "migrations" not in path.parts
    )
    assert len(files) > 100  # the scan reads the rooms, not an empty tree
    return [(path, ast.parse(path.read_text())) for path in files]


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _is_literal_key(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    return isinstance(node, ast.Dict) and any(
        isinstance(key, ast.Constant) and isinstance(key.value, str) for key in node.keys
    )


def test_no_room_names_a_setting_by_a_string_literal():
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path, tree in _room_trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and _name(node.func) in SETTING_CALLS
        and node.args
        and _is_literal_key(node.args[0])
    ]
    assert found == []


def test_no_room_reads_django_settings_with_getattr_but_the_accessor():
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path, tree in _room_trees()
        if path != ACCESSOR
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and _name(node.func) == "getattr"
        and node.args
        and (_name(node.args[0]) or "").endswith("settings")
    ]
    assert found == []


def test_the_accessor_reads_each_deployment_setting_with_its_one_default(settings):
    from extensions.transpile import DEFAULT_COMPILE_MS
    from kernel import deployment
    from sources.conf import outbound_conf

    assert deployment.DEPLOYMENT_DEFAULTS["EXTENSIONS_DEPLOY_COMPILE_MS"] == DEFAULT_COMPILE_MS
    assert outbound_conf().drain_max_writes == 100
    settings.SOURCES_DRAIN_MAX_WRITES = 3
    assert outbound_conf().drain_max_writes == 3
    assert deployment.sign_in_limits(whole_address=True)[0] == 100
    settings.TURBOBASE_SIGN_IN_ADDRESS_MAX_FAILURES = 7
    assert deployment.sign_in_limits(whole_address=True)[0] == 7
