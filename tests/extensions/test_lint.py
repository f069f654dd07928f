"""The offline checks: ``lint_check`` and ``turbobase ext new / lint / test`` with no instance."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from extensions.lint import lint_check
from extensions.siblings import SiblingImportRefused
from tests.conftest import cli

FIXTURES = Path(__file__).parent / "fixtures"
SEED_FILES = sorted(
    p.relative_to(FIXTURES).as_posix()
    for p in (FIXTURES / "processes").glob("*.ts")
    if p.name != "shared-rule.ts"
)
TRAP = "const legacy = { id: 'acme:legacy-copy' };\n\nexport default"


def files_of(*paths: str) -> dict[str, str]:
    return {path: (FIXTURES / path).read_text(encoding="utf-8") for path in paths}


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    shutil.copytree(FIXTURES, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TURBOBASE_URL", raising=False)  # offline: no instance anywhere
    return tmp_path


@pytest.mark.parametrize("path", SEED_FILES)
def test_seed_fixture_has_no_warning(path):
    files = files_of(path, "processes/shared-rule.ts")
    report = lint_check(entry=path, files=files)
    assert (report.kind, report.warnings) == ("process", [])
    assert report.defined_id == report.literal


def test_ext_lint_ci_exits_0_on_every_seed_fixture_with_the_console_script(project):
    script = Path(sys.executable).with_name("turbobase")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "turbobase.cli.main"]
    done = subprocess.run(
        [*command, "ext", "lint", "--ci", *SEED_FILES, "hooks/require-memo.ts"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=project,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        f"ok {path} (process acme:{Path(path).stem})" for path in SEED_FILES
    ] + ["ok hooks/require-memo.ts (hook acme:require-memo)"]


def test_id_literal_trap_is_a_warning_and_fails_ci(project, capsys):
    path = project / "processes" / "raise-po-and-bill.ts"
    path.write_text(path.read_text().replace("export default", TRAP, 1))
    code, out, err = cli(capsys, "ext", "lint", "processes/raise-po-and-bill.ts")
    assert (code, err) == (0, "")
    assert out == (
        "warning processes/raise-po-and-bill.ts: id-literal: the first id: literal in the file is "
        "'acme:legacy-copy' but the module defines 'acme:raise-po-and-bill'; the store keys the "
        "module on the first literal, so make it the extension's own id\n"
    )
    code, _, _ = cli(capsys, "ext", "lint", "--ci", "processes/raise-po-and-bill.ts")
    assert code == 1


def test_lint_refuses_an_npm_import_naming_it(project, capsys):
    path = project / "processes" / "legs.ts"
    path.write_text("import { z } from 'zod';\n" + path.read_text())
    code, out, err = cli(capsys, "ext", "lint", "processes/legs.ts")
    assert (code, out) == (1, "")
    assert err.startswith(
        "error processes/legs.ts: import 'zod' in processes/legs.ts is refused: an npm package"
    )


def test_lint_refuses_a_path_escaping_the_directory(project):
    files = files_of("processes/po-with-memo.ts", "hooks/shared-rule.ts")
    files["processes/po-with-memo.ts"] = files["processes/po-with-memo.ts"].replace(
        "'./shared-rule.js'", "'../hooks/shared-rule.js'"
    )
    with pytest.raises(SiblingImportRefused) as refused:
        lint_check(entry="processes/po-with-memo.ts", files=files)
    assert refused.value.field == "../hooks/shared-rule.js"
    assert "escapes the extension's directory" in refused.value.message


def test_a_sibling_module_is_skipped(project, capsys):
    code, out, _ = cli(capsys, "ext", "lint", "--ci", "processes/shared-rule.ts")
    assert code == 0
    assert (
        out
        == "skipped processes/shared-rule.ts: no defineProcess/defineHook default export (a sibling module)\n"
    )


def test_ext_new_process_scaffolds_a_file_that_lints_clean(project, capsys):
    code, out, _ = cli(
        capsys,
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
    assert code == 0
    assert (
        out
        == "wrote processes/purchase-order-then-vendor-bill.ts (app:purchase-order-then-vendor-bill) "
        "and processes/purchase-order-then-vendor-bill.test.json\n"
    )
    source = (project / "processes" / "purchase-order-then-vendor-bill.ts").read_text()
    assert "onFailure: 'rollback'" in source
    assert "recordType: 'purchaseOrder'" in source and "recordType: 'vendorBill'" in source
    code, out, _ = cli(
        capsys, "ext", "lint", "--ci", "processes/purchase-order-then-vendor-bill.ts"
    )
    assert (code, out) == (
        0,
        "ok processes/purchase-order-then-vendor-bill.ts "
        "(process app:purchase-order-then-vendor-bill)\n",
    )
    again, _, err = cli(
        capsys, "ext", "new", "process", "--record", "purchaseOrder", "--then", "vendorBill"
    )
    assert again == 1
    assert "already exists" in err


def test_ext_new_writes_into_the_project_found_upwards(project, capsys, monkeypatch):
    (project / "turbobase.config.json").write_text('{"environments": {}}')
    (project / "docs").mkdir()
    monkeypatch.chdir(project / "docs")
    code, out, _ = cli(capsys, "ext", "new", "process", "--record", "customer")
    assert (code, out) == (
        0,
        "wrote ../processes/customer.ts (app:customer) and ../processes/customer.test.json\n",
    )
    assert (project / "processes" / "customer.ts").is_file()
    assert not (project / "docs" / "processes").exists()


def test_ext_new_never_writes_into_a_python_package(tmp_path, capsys, monkeypatch):
    server = (
        tmp_path / "server"
    )  # a source tree like the instance's own: processes/ is a Django app
    (server / "processes").mkdir(parents=True)
    (server / "processes" / "__init__.py").write_text("")
    monkeypatch.chdir(server)
    code, out, err = cli(capsys, "ext", "new", "process", "--record", "customer")
    assert (code, out) == (2, "")
    assert err.startswith("turbobase: processes is inside the Python package ")
    assert "extensions live in a project folder of their own" in err
    assert sorted(p.name for p in (server / "processes").iterdir()) == ["__init__.py"]


def test_ext_test_runs_a_hook_on_each_sample(project, capsys):
    code, out, _ = cli(
        capsys,
        "ext",
        "test",
        "hooks/require-memo.ts",
        "--sample",
        '[{"parent": {"company_name": "A"}}, {"parent": {"company_name": "A", "memo": "m"}}]',
    )
    assert code == 0
    assert out == (
        "rejected MEMO_REQUIRED (parent.memo): a memo is required on every customer\npassed\n"
    )


def test_ext_test_on_a_process_says_it_has_no_run(project, capsys):
    code, out, _ = cli(
        capsys, "ext", "test", "processes/raise-po-and-bill.ts", "--sample", '{"vendorId": "V1"}'
    )
    assert code == 1
    assert out == "failed: extension default export has no run() function\n"


def test_ext_test_reports_a_hook_that_throws(project, capsys):
    (project / "hooks" / "boom.ts").write_text(
        "import { defineHook } from '@turbobase/extensions';\n"
        "export default defineHook({ id: 'acme:boom', recordType: 'customer', on: 'before_save',\n"
        "  run(ctx) { throw new Error('boom'); } });\n"
    )
    code, out, _ = cli(capsys, "ext", "test", "hooks/boom.ts", "--sample", "{}")
    assert code == 1
    assert out.startswith("failed: sandbox_script_error: Error: boom (at hooks/boom.ts:3:")
