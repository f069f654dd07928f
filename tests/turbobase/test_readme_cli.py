"""The docs' command-line examples, run as written against a live instance (gunicorn + workers).

Each example is taken verbatim from README.md or a page under docs/ (the test fails if the docs stop
showing it: ``docs/api.md`` for users and tokens, ``docs/processes.md`` for the CLI); only the
placeholders (``<id>``, ``<runId>``, …) are filled in and ``TURBOBASE_URL`` points at the live
instance's port instead of 8000. ``turbobase`` is the console script ``pip install -e .`` puts next
to the virtualenv's python, as README says.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.turbobase.live import ROOT, Instance

pytestmark = pytest.mark.workers

README = "\n".join(
    page.read_text() for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
)
SCRIPT = Path(sys.executable).with_name("turbobase")
TURBOBASE = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "turbobase.cli.main"]
MIGRATION = "acme:migrate-customers-tracked"


def readme_line(text: str) -> str:
    """``text`` as README shows it on a line of a code block (comments after it allowed)."""
    assert re.search(rf"^{re.escape(text)}(\s+#.*)?$", README, re.MULTILINE), (
        f"README and docs/ no longer show: {text}"
    )
    return text


def expand(line: str, **values: str) -> list[str]:
    """README's shorthand → commands: ``a|b|c`` verbs, ``[--opt]`` optional, ``<name>`` placeholders."""
    for name, value in values.items():
        line = line.replace(f"<{name}>", value)
    assert "<" not in line, f"unfilled placeholder in {line}"
    line = re.sub(r"\s\[(--[a-z-]+)\]", "", line)  # the option is shown optional: run without it
    first, *rest = line.split(" | ")
    commands = [first]
    for alternative in rest:  # "turbobase processes list | runs <id>": same prefix, another verb
        commands.append(" ".join(first.split()[:2]) + " " + alternative)
    expanded = []
    for command in commands:
        words = shlex.split(command)
        verbs = next((w for w in words if "|" in w), None)
        if verbs is None:
            expanded.append(words)
        else:
            expanded += [[v if w == verbs else w for w in words] for v in verbs.split("|")]
    return expanded


def run(env: dict[str, str], cwd: Path, words: list[str]) -> subprocess.CompletedProcess[str]:
    argv = [*TURBOBASE, *words[1:]] if words[0] == "turbobase" else words
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=180)


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert (done.returncode, done.stderr) == (0, ""), (done.args, done.stdout, done.stderr)
    return done.stdout


def answered(done: subprocess.CompletedProcess[str]) -> None:
    """A command the instance may refuse for the run's state: success, or README's one-line error."""
    assert done.returncode in (0, 1), (done.args, done.stdout, done.stderr)
    if done.returncode == 1:
        assert done.stderr.startswith("turbobase: ") and done.stderr.count("\n") == 1, done.stderr
        assert "Traceback" not in done.stderr


def test_readme_cli_examples_run_as_written(live: Instance, tmp_path):
    env = {k: v for k, v in live.env.items() if not k.startswith("TURBOBASE_")}
    env["PYTHONPATH"] = str(ROOT)
    manage = [sys.executable, str(ROOT / "manage.py")]

    # Users, sign-in and tokens: `.venv/bin/python` is this interpreter.
    for line in (
        ".venv/bin/python manage.py tb_user alice --password 's3cret'",
        ".venv/bin/python manage.py tb_user ops --password 's3cret' --admin",
        ".venv/bin/python manage.py tb_token ops --scope extensions:deploy",
    ):
        words = shlex.split(readme_line(line))
        done = subprocess.run(
            [*manage, *words[2:]],
            env={**env, **{"DATABASE_URL": live.database_url}},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("tbp_")

    # The CLI section: the token export, then each command.
    export = readme_line(
        "export TURBOBASE_TOKEN=$(.venv/bin/python manage.py tb_token admin --scope "
        "extensions:deploy --scope data:read --scope data:write)"
    )
    token_argv = shlex.split(export.split("$(", 1)[1].rstrip(")"))
    env["TURBOBASE_TOKEN"] = subprocess.run(
        [*manage, *token_argv[2:]],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=180,
    ).stdout.strip()
    readme_line("export TURBOBASE_URL=http://127.0.0.1:8000")
    env["TURBOBASE_URL"] = live.base
    assert ok(run(env, tmp_path, shlex.split(readme_line("turbobase health")))).startswith(
        f"ok — {live.base}"
    )
    assert ok(run(env, tmp_path, shlex.split(readme_line("turbobase whoami")))) == (
        f"admin (administrator) at {live.base}; scopes: extensions:deploy, data:read, data:write\n"
    )
    assert (
        json.loads(ok(run(env, tmp_path, shlex.split(readme_line("turbobase --json whoami")))))[
            "username"
        ]
        == "admin"
    )
    created = requests.post(
        live.url("/v1/data/legacy_customer"),
        timeout=60,
        headers={"Authorization": f"Bearer {env['TURBOBASE_TOKEN']}"},
        json={"parent": {"company_name": "Readme", "legacy_id": "L-README"}},
    )
    assert created.status_code == 201, created.text
    for words in expand(
        readme_line("turbobase data settle <recordType> <pgRowId>"),
        recordType="legacy_customer",
        pgRowId=str(created.json()["pgRowId"]),
    ):
        answered(run(env, tmp_path, words))  # nothing to settle on a healthy row: a clean refusal

    # Extensions: scaffold, lint, deploy, a hook tested offline, plan, remove.
    assert ok(
        run(
            env,
            tmp_path,
            shlex.split(
                readme_line(
                    "turbobase ext new process --record purchaseOrder --then vendorBill --on-failure rollback"
                )
            ),
        )
    ) == (
        "wrote processes/purchase-order-then-vendor-bill.ts (app:purchase-order-then-vendor-bill) "
        "and processes/purchase-order-then-vendor-bill.test.json\n"
    )
    assert ok(run(env, tmp_path, shlex.split(readme_line("turbobase ext types")))) == (
        "wrote processes/turbobase-env.d.ts (record types and deployed processes)\n"
    )
    ok(
        run(
            env,
            tmp_path,
            shlex.split(
                readme_line("turbobase ext lint processes/purchase-order-then-vendor-bill.ts --ci")
            ),
        )
    )
    assert ok(
        run(
            env,
            tmp_path,
            shlex.split(
                readme_line("turbobase ext deploy processes/purchase-order-then-vendor-bill.ts")
            ),
        )
    ) == ("deployed app:purchase-order-then-vendor-bill → status=active (new)\n")
    assert ok(
        run(
            env,
            tmp_path,
            shlex.split(readme_line("turbobase ext new hook --record customer --require memo")),
        )
    ) == ("wrote hooks/require-memo.ts (app:require-memo)\n")
    assert ok(
        run(
            env,
            tmp_path,
            shlex.split(
                readme_line(
                    """turbobase ext test hooks/require-memo.ts --sample '{"parent":{"memo":""}}'"""
                )
            ),
        )
    ) == ("rejected MEMO_REQUIRED (parent.memo): a memo is required on every customer\n")
    ok(run(env, tmp_path, shlex.split(readme_line("turbobase ext plan"))))
    for words in expand(
        readme_line("turbobase ext remove <id>"), id="app:purchase-order-then-vendor-bill"
    ):
        ok(run(env, tmp_path, words))
    listed = requests.get(
        live.url("/v1/extensions"),
        timeout=60,
        headers={"Authorization": f"Bearer {env['TURBOBASE_TOKEN']}"},
    ).json()
    statuses = {e["id"]: e["status"] for e in listed["extensions"]}
    assert statuses["app:purchase-order-then-vendor-bill"] == "removed"

    # Processes: invoke the demo's migration, look at it, steer it, read its log.
    invoke = expand(
        readme_line("""turbobase processes invoke <id> --input '{"batch":"2026-10"}' [--sync]"""),
        id=MIGRATION,
    )[0]
    invoked = ok(run(env, tmp_path, invoke))
    assert (
        invoked.startswith("queued ") and "follow it: turbobase logs --process-run " in invoked
    ), invoked
    run_id = invoked.split()[1]
    for words in expand(
        readme_line("turbobase processes list | runs <id> | run <runId>"),
        id=MIGRATION,
        runId=run_id,
    ):
        ok(run(env, tmp_path, words))
    for words in expand(
        readme_line("turbobase processes cancel|resume|rollback <runId>"), runId=run_id
    ):
        answered(run(env, tmp_path, words))
    for words in expand(readme_line("turbobase logs --process-run <runId> --follow"), runId=run_id):
        answered(run(env, tmp_path, words))
    assert os.path.exists(tmp_path / "hooks" / "require-memo.ts")
