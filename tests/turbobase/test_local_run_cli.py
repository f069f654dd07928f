"""``turbobase ext test processes/<file>.ts`` (in this process on the test database, and once as
the real console script on its own in-memory database), ``ext new process``'s test file, and
``ext lint``'s warning for a process without one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import cli
from tests.turbobase.test_local_run import PO_AND_BILL, process_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    (tmp_path / "turbobase.config.json").write_text('{"environments": {}}', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_json(path: Path, value) -> str:
    path.write_text(json.dumps(value), encoding="utf-8")
    return str(path)


def test_a_committed_run_exits_0_and_prints_the_ledger_records_and_state(db, capsys, project):
    path = process_file(project, PO_AND_BILL)
    code, out, err = cli(capsys, "ext", "test", str(path))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["step", "kind", "outcome", "record", "code"]
    assert lines[1].split()[:4] == ["po", "create", "confirmed", "purchaseOrder"]
    assert "  purchaseOrder PO-1041 (synced)" in out
    assert "state: committed" in out


def test_json_and_a_failed_run_exits_1(db, capsys, project):
    path = process_file(project, PO_AND_BILL)
    verdicts = write_json(project / "verdicts.json", {"purchaseOrder": {"refuse": "NOPE"}})
    code, out, _ = cli(capsys, "ext", "test", str(path), "--source-verdicts", verdicts, "--json")
    assert code == 1
    body = json.loads(out)
    assert body["state"] == "failed"
    assert [(s["step"], s["outcome"], s.get("code")) for s in body["ledger"]] == [
        ("po", "failed", "NOPE"),
        ("bill", "skipped", None),
    ]


def test_bad_fixtures_exit_2_naming_the_record_and_field(db, capsys, project):
    path = process_file(project, PO_AND_BILL)
    fixtures = write_json(
        project / "records.json", {"records": {"purchaseOrder": [{"parent": {"colour": "red"}}]}}
    )
    code, out, err = cli(capsys, "ext", "test", str(path), "--fixtures", fixtures)
    assert (code, out) == (2, "")
    assert "fixtures.records.purchaseOrder[0].parent.colour" in err
    assert "purchaseOrder has no field 'colour'" in err


def test_input_that_fails_the_schema_exits_2(db, capsys, project):
    from tests.processes.sleep_support import sleeper

    path = process_file(project, sleeper("t:nap"))
    code, _, err = cli(capsys, "ext", "test", str(path), "--input", '{"memo": 3}')
    assert code == 2
    assert "memo" in err


def test_runs_as_the_user_named_by_as(db, capsys, project):
    path = process_file(project, PO_AND_BILL)
    code, out, _ = cli(capsys, "ext", "test", str(path), "--as", "carol", "--json")
    assert code == 0
    from processes.models import ProcessRun

    run = ProcessRun.objects.get(pk=json.loads(out)["runId"])
    assert run.invoked_by.get_username() == "carol"


def test_the_scaffold_and_its_test_file_pass(db, capsys, project):
    code, out, _ = cli(
        capsys, "ext", "new", "process", "--record", "purchaseOrder", "--then", "vendorBill"
    )
    assert code == 0
    test_file = project / "processes" / "purchase-order-then-vendor-bill.test.json"
    assert f"and processes/{test_file.name}" in out
    spec = json.loads(test_file.read_text())
    assert spec["expect"]["ledger"] == [
        {"step": "purchase-order", "kind": "create", "outcome": "confirmed"},
        {"step": "vendor-bill", "kind": "create", "outcome": "confirmed"},
    ]
    code, out, err = cli(capsys, "ext", "test", "processes/purchase-order-then-vendor-bill.ts")
    assert (code, err) == (0, "")
    assert "state: committed" in out
    assert out.endswith("processes/purchase-order-then-vendor-bill.test.json: as expected\n")


def test_a_ledger_not_the_one_the_test_file_expects_exits_1_with_a_diff(db, capsys, project):
    cli(capsys, "ext", "new", "process", "--record", "salesOrder")
    test_file = project / "processes" / "sales-order.test.json"
    spec = json.loads(test_file.read_text())
    spec["expect"]["ledger"][0]["outcome"] = "failed"
    test_file.write_text(json.dumps(spec))
    code, _, err = cli(capsys, "ext", "test", "processes/sales-order.ts")
    assert code == 1
    assert "-sales-order create failed" in err
    assert "+sales-order create confirmed" in err


def test_lint_warns_but_does_not_fail_on_a_process_without_a_test_file(db, capsys, project):
    cli(capsys, "ext", "new", "process", "--record", "salesOrder")
    code, out, _ = cli(capsys, "ext", "lint", "processes/sales-order.ts")
    assert (code, out.startswith("ok processes/sales-order.ts")) == (0, True)
    (project / "processes" / "sales-order.test.json").unlink()
    code, out, _ = cli(capsys, "ext", "lint", "processes/sales-order.ts")
    assert code == 0
    assert out.startswith("warning processes/sales-order.ts: process-without-test: ")
    code, _, _ = cli(capsys, "ext", "lint", "--ci", "processes/sales-order.ts")
    assert code == 1


def test_a_hook_still_needs_a_sample(capsys, project):
    hook = project / "hooks" / "h.ts"
    hook.parent.mkdir()
    hook.write_text(
        "import { defineHook } from '@turbobase/extensions';\n"
        "export default defineHook({ id: 'a:h', recordType: 'salesOrder', on: 'before_save', "
        "run(ctx) {} });\n"
    )
    code, _, err = cli(capsys, "ext", "test", str(hook))
    assert code == 2
    assert (
        err == f"turbobase: {hook} is not a process: a hook is tested on a sample, give --sample\n"
    )
    code, _, err = cli(capsys, "ext", "test", "processes/missing.ts")
    assert (code, err) == (2, "turbobase: processes/missing.ts: no such file\n")


def test_the_console_script_runs_on_a_fresh_in_memory_database(tmp_path):
    """No instance and no database: the real command, its own Django, the demo's process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DATABASE_URL": "postgres://nobody@127.0.0.1:1/x"}
    fixtures = write_json(
        tmp_path / "f.json",
        {
            "users": {"demo": {}},
            "tasks": {"check-in": {"output": {"called": True}}},
        },
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "turbobase.cli.main",
            "ext",
            "test",
            str(ROOT / "demo" / "processes" / "trial-to-paid.ts"),
            "--input",
            '{"customer": "c-1", "trial": "30d"}',
            "--fixtures",
            fixtures,
            "--json",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert [s["step"] for s in body["ledger"]] == [
        "welcome",
        "trial",
        "paid",
        "check-in",
        "outcome",
    ]
    assert body["virtualSeconds"] >= 30 * 86400
