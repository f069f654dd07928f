"""``turbobase ext plan|deploy --to <env>``: a project folder as one plan, against a live server."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from extensions.models import ExtensionModule, ExtensionStatus, ExtensionVersion
from extensions.store import store_forget
from kernel.models import token_issue
from processes.schedules.models import ProcessSchedule
from tests.conftest import cli, make_user

FIXTURES = Path(__file__).parent.parent / "extensions" / "fixtures"
TRACKED = "acme:migrate-customers-tracked"
NIGHTLY = {
    "name": "migrate-customers-nightly",
    "scheduleKind": "cron",
    "scheduleExpr": "0 2 * * *",
    "scheduleTz": "Europe/Berlin",
    "body": {"kind": "process", "process": TRACKED, "input": {"batch": "2026-10"}},
}


@pytest.fixture
def project(tmp_path, live_server, monkeypatch) -> Iterator[Path]:
    """A project folder whose ``staging`` environment is the live server, and its token."""
    owner = make_user("ops", admin=True)
    _, raw = token_issue(user=owner, scopes=["extensions:deploy"])
    for name in (
        "processes/migrate-customers-tracked.ts",
        "processes/raise-po-and-bill.ts",
        "hooks/require-memo.ts",
        "hooks/shared-rule.ts",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / name, tmp_path / name)
    (tmp_path / "turbobase").mkdir()
    schedules_write(tmp_path, [NIGHTLY])
    (tmp_path / "turbobase.config.json").write_text(
        json.dumps(
            {
                "environments": {
                    "staging": {"url": live_server.url, "tokenEnv": "TB_TOKEN_STAGING"},
                    "prod": {"url": "http://127.0.0.1:9"},
                }
            }
        )
    )
    monkeypatch.setenv("TB_TOKEN_STAGING", raw)
    for name in ("TURBOBASE_URL", "TURBOBASE_TOKEN", "TURBOBASE_TOKEN_PROD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path / "processes")  # the config is found upwards
    store_forget()
    yield tmp_path
    store_forget()


def schedules_write(root: Path, entries: list) -> None:
    (root / "turbobase" / "schedules.json").write_text(json.dumps(entries, indent=2))


def active() -> list[str]:
    return sorted(
        ExtensionModule.objects.filter(status=ExtensionStatus.ACTIVE).values_list("id", flat=True)
    )


def test_plan_then_deploy_then_plan_again(project, live_server, capsys):
    code, out, err = cli(capsys, "ext", "plan", "--to", "staging")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"plan for staging ({live_server.url}):",
        f"new {TRACKED} (process, processes/migrate-customers-tracked.ts)",
        "new acme:raise-po-and-bill (process, processes/raise-po-and-bill.ts)",
        "new acme:require-memo (hook, hooks/require-memo.ts)",
        f"new schedule migrate-customers-nightly → {TRACKED} (0 2 * * * Europe/Berlin)",
    ]
    assert (ExtensionModule.objects.count(), ProcessSchedule.objects.count()) == (0, 0)

    code, out, err = cli(capsys, "ext", "deploy", "--to", "staging")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"deployed {TRACKED} → status=active (new)",
        "deployed acme:raise-po-and-bill → status=active (new)",
        "deployed acme:require-memo → status=active (new)",
        "schedule migrate-customers-nightly → new",
        f"applied to staging ({live_server.url})",
    ]
    assert active() == [TRACKED, "acme:raise-po-and-bill", "acme:require-memo"]
    assert sorted(ExtensionVersion.objects.get(module_id="acme:require-memo").source) == [
        "hooks/require-memo.ts",
        "hooks/shared-rule.ts",
    ]
    assert ProcessSchedule.objects.get().schedule_tz == "Europe/Berlin"

    code, out, _ = cli(capsys, "ext", "plan", "--to", "staging")
    assert code == 0
    assert [line.split(" ")[0] for line in out.splitlines()[1:]] == ["unchanged"] * 4


def test_the_plan_lists_what_is_deployed_that_the_project_does_not_declare(project, capsys):
    cli(capsys, "ext", "deploy", "--to", "staging")
    (project / "processes" / "raise-po-and-bill.ts").unlink()
    code, out, _ = cli(capsys, "ext", "plan", "--to", "staging")
    assert code == 0
    assert out.splitlines()[-1] == (
        "undeclared acme:raise-po-and-bill (process v1) — deployed, not in this project; "
        "remove it with: turbobase ext remove acme:raise-po-and-bill"
    )
    code, out, _ = cli(capsys, "--json", "ext", "plan", "--to", "staging")
    assert json.loads(out)["undeclared"] == [
        {"id": "acme:raise-po-and-bill", "kind": "process", "version": 1}
    ]


def test_an_id_mismatch_refuses_the_whole_deploy(project, capsys):
    source = (project / "processes" / "raise-po-and-bill.ts").read_text()
    (project / "processes" / "raise-po-and-bill.ts").write_text(
        source.replace("export default", "// id: 'acme:old-name'\nexport default", 1)
    )
    code, out, err = cli(capsys, "ext", "deploy", "--to", "staging")
    assert (code, out) == (1, "")
    assert "extension_id_mismatch" in err and "(modules[1].id)" in err and "'acme:old-name'" in err
    assert (ExtensionModule.objects.count(), ProcessSchedule.objects.count()) == (0, 0)


def test_a_schedule_keeps_its_process_until_both_go_in_one_deploy(project, capsys):
    cli(capsys, "ext", "deploy", "--to", "staging")
    (project / "processes" / "migrate-customers-tracked.ts").unlink()
    code, _, err = cli(capsys, "ext", "deploy", "--to", "staging", "--remove", TRACKED)
    assert code == 1
    assert "409 extension_in_use: PROCESS_SCHEDULED (schedules[0].body.process)" in err
    assert TRACKED in active()
    schedules_write(project, [])
    code, out, _ = cli(capsys, "ext", "plan", "--to", "staging", "--remove", TRACKED)
    assert code == 0
    assert (
        f"removed {TRACKED} (process) with schedule migrate-customers-nightly" in out.splitlines()
    )
    code, out, err = cli(capsys, "ext", "deploy", "--to", "staging", "--remove", TRACKED)
    assert (code, err) == (0, "")
    assert "schedule migrate-customers-nightly → removed" in out.splitlines()
    assert f"removed {TRACKED} → status=removed" in out.splitlines()
    assert TRACKED not in active() and ProcessSchedule.objects.count() == 0


def test_environment_mistakes_are_named(project, capsys, monkeypatch):
    code, _, err = cli(capsys, "ext", "deploy", "--to", "qa")
    assert code == 2 and "names no environment 'qa' (it has: prod, staging)" in err
    code, _, err = cli(capsys, "ext", "plan", "--to", "prod")
    assert code == 2 and "TURBOBASE_TOKEN_PROD is not set" in err
    code, _, err = cli(capsys, "ext", "deploy", "--to", "staging", "processes/x.ts")
    assert code == 2 and "name no FILE" in err
    code, _, err = cli(capsys, "ext", "deploy")
    assert code == 2 and "--to ENV" in err
    monkeypatch.chdir(project.parent)
    code, _, err = cli(capsys, "ext", "plan", "--to", "staging")
    assert code == 2 and "no turbobase.config.json" in err
    assert ExtensionModule.objects.count() == 0


def config_write(root: Path, staging: dict) -> None:
    (root / "turbobase.config.json").write_text(json.dumps({"environments": {"staging": staging}}))


def test_url_env_names_the_instance_at_any_port(project, live_server, capsys, monkeypatch):
    # The committed config names a dead port; the variable it names carries the live one.
    config_write(
        project, {"url": "http://127.0.0.1:9", "urlEnv": "TB_URL", "tokenEnv": "TB_TOKEN_STAGING"}
    )
    monkeypatch.setenv("TB_URL", live_server.url)
    code, out, err = cli(capsys, "ext", "plan", "--to", "staging")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"plan for staging ({live_server.url}):"
    code, out, err = cli(capsys, "ext", "deploy", "--to", "staging")
    assert (code, err) == (0, "") and out.splitlines()[
        -1
    ] == f"applied to staging ({live_server.url})"
    assert TRACKED in active()


def test_url_env_unset_falls_back_to_url(project, live_server, capsys, monkeypatch):
    config_write(
        project, {"url": live_server.url, "urlEnv": "TB_URL", "tokenEnv": "TB_TOKEN_STAGING"}
    )
    monkeypatch.delenv("TB_URL", raising=False)
    code, out, err = cli(capsys, "ext", "plan", "--to", "staging")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"plan for staging ({live_server.url}):"


def test_url_env_mistakes_are_named(project, capsys, monkeypatch):
    config_write(project, {"urlEnv": "TB_URL", "tokenEnv": "TB_TOKEN_STAGING"})
    monkeypatch.delenv("TB_URL", raising=False)
    code, _, err = cli(capsys, "ext", "plan", "--to", "staging")
    assert code == 2 and "TB_URL is not set and environments.staging has no url" in err
    monkeypatch.setenv("TB_URL", "ftp://nowhere")
    code, _, err = cli(capsys, "ext", "plan", "--to", "staging")
    assert code == 2 and "TB_URL (environments.staging.urlEnv) must be an http(s) URL" in err
    config_write(project, {"url": "http://127.0.0.1:9", "urlEnv": 7})
    code, _, err = cli(capsys, "ext", "plan", "--to", "staging")
    assert code == 2 and "environments.staging.urlEnv must name a variable" in err
    assert ExtensionModule.objects.count() == 0
