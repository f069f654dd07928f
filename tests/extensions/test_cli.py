"""``turbobase ext`` — the real console script in a subprocess — against a live test server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from extensions.deploy import extension_deploy
from extensions.models import ExtensionModule, ExtensionVersion
from extensions.pool import pool_close
from extensions.store import store_forget
from kernel.models import token_issue
from records.models import Record
from tests.conftest import make_user

FIXTURES = Path(__file__).parent / "fixtures"
SCRIPT = Path(sys.executable).with_name("turbobase")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "turbobase.cli.main"]


@pytest.fixture
def project(tmp_path) -> Iterator[Path]:
    shutil.copytree(FIXTURES, tmp_path, dirs_exist_ok=True)
    yield tmp_path
    store_forget()
    pool_close()


@pytest.fixture
def instance(live_server, project) -> dict[str, str]:
    """The CLI's environment: the live server and an administrator's deploy token."""
    owner = make_user("ops", admin=True)
    _, raw = token_issue(user=owner, scopes=["extensions:deploy"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("TURBOBASE_")}
    return {**env, "TURBOBASE_URL": live_server.url, "TURBOBASE_TOKEN": raw}


def turbobase(env: dict[str, str], cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *argv], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def test_hook_deployed_through_the_cli_rejects_a_data_write_with_its_own_code(
    instance, project, live_server
):
    done = turbobase(instance, project, "ext", "deploy", "hooks/require-memo.ts")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "deployed acme:require-memo → status=active (new)\n"
    version = ExtensionVersion.objects.get()
    assert sorted(version.source) == ["hooks/require-memo.ts", "hooks/shared-rule.ts"]

    alice = make_user("alice")
    _, raw = token_issue(user=alice, scopes=["data:write"])
    headers = {"Authorization": f"Bearer {raw}"}
    refused = requests.post(
        f"{live_server.url}/v1/data/customer",
        json={"parent": {"company_name": "A"}},
        headers=headers,
        timeout=30,
    )
    assert refused.status_code == 422
    assert refused.json() == {
        "error": "write_refused",
        "rejection": {
            "code": "MEMO_REQUIRED",
            "field": "parent.memo",
            "message": "a memo is required on every customer",
        },
    }
    assert Record.reads.count() == 0
    allowed = requests.post(
        f"{live_server.url}/v1/data/customer",
        json={"parent": {"company_name": "A", "memo": "ok"}},
        headers=headers,
        timeout=30,
    )
    assert allowed.status_code == 201, allowed.text

    again = turbobase(instance, project, "ext", "deploy", "hooks/require-memo.ts")
    assert again.stdout == "deployed acme:require-memo → status=active (replaced existing)\n"
    assert ExtensionVersion.objects.count() == 2


def test_scaffold_lints_and_deploys_cleanly(instance, project):
    new = turbobase(
        instance,
        project,
        "ext",
        "new",
        "process",
        "--record",
        "purchaseOrder",
        "--then",
        "vendorBill",
        "--on-failure",
        "rollback",
    )
    assert new.returncode == 0, new.stderr
    lint = turbobase(
        instance, project, "ext", "lint", "--ci", "processes/purchase-order-then-vendor-bill.ts"
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    deploy = turbobase(
        instance, project, "ext", "deploy", "processes/purchase-order-then-vendor-bill.ts"
    )
    assert (deploy.returncode, deploy.stderr) == (0, "")
    assert deploy.stdout == "deployed app:purchase-order-then-vendor-bill → status=active (new)\n"
    module = ExtensionModule.objects.get()
    assert (module.kind, module.definition["onFailure"]) == ("process", "rollback")
    assert [s["recordType"] for s in module.definition["steps"]] == ["purchaseOrder", "vendorBill"]


def test_a_refused_deploy_names_the_specifier_and_stores_nothing(instance, project):
    path = project / "processes" / "legs.ts"
    path.write_text("import { z } from 'zod';\n" + path.read_text())
    done = turbobase(instance, project, "ext", "deploy", "processes/legs.ts")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith(
        "turbobase: POST /v1/extensions answered 400 invalid_extension: IMPORT_REFUSED (zod): import 'zod'"
    )
    assert ExtensionModule.objects.count() == 0


def test_plan_lists_what_the_project_does_not_declare_and_remove_takes_it_out(instance, project):
    owner = ExtensionVersion._meta.get_field("deployed_by").related_model.objects.get(
        username="ops"
    )
    deploy = turbobase(instance, project, "ext", "deploy", "processes/legs.ts")
    assert deploy.returncode == 0, deploy.stderr
    stray = (
        "import { defineProcess } from '@turbobase/extensions';\n"
        "export default defineProcess({ id: 'leg', input: { type: 'object' },\n"
        "  steps: [{ id: 'doc', recordType: 'salesOrder', build: () => ({ parent: {} }) }] });\n"
    )
    extension_deploy(entry="old/leg.ts", files={"old/leg.ts": stray}, by=owner)

    plan = turbobase(instance, project, "ext", "plan")
    assert plan.returncode == 0, plan.stderr
    lines = plan.stdout.splitlines()
    assert lines[0] == "undeclared leg (process v1) — remove it with: turbobase ext remove leg"
    assert "not deployed acme:raise-po-and-bill (processes/raise-po-and-bill.ts)" in lines
    assert not any("acme:legs" in line for line in lines)

    removed = turbobase(instance, project, "ext", "remove", "leg")
    assert (removed.returncode, removed.stdout) == (0, "removed leg → status=removed\n")
    assert ExtensionModule.objects.get(pk="leg").status == "removed"
    plan = turbobase(instance, project, "ext", "plan")
    assert plan.stdout.splitlines()[0] == "nothing is deployed that the project does not declare"

    missing = turbobase(instance, project, "ext", "remove", "leg")
    assert missing.returncode == 1
    assert (
        missing.stderr == "turbobase: DELETE /v1/extensions/leg answered 404 extension_not_found\n"
    )


def test_deploy_needs_an_administrator(instance, project):
    bob = make_user("bob")
    _, raw = token_issue(user=bob, scopes=["extensions:deploy"])
    done = turbobase(
        {**instance, "TURBOBASE_TOKEN": raw}, project, "ext", "deploy", "processes/legs.ts"
    )
    assert done.returncode == 1
    assert done.stderr.startswith("turbobase: POST /v1/extensions answered 403 admin_required")
    assert ExtensionModule.objects.count() == 0
