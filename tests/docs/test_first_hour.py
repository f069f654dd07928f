"""README's first hour, run as written on a fresh instance at a free port (gunicorn + workers).

The commands are README's own: every fenced block marked ``sh first-hour``, joined in order and run
by bash in a fresh "clone" (a folder holding ``manage.py`` and ``.venv``, as a clone does after
``make run``), so README and this test cannot diverge. A line ``# → text`` in a block is output
the walkthrough promises: each must appear in the script's output, in order (``…`` stands for any
text; README's ``127.0.0.1:8000`` for the instance's own address). Then what the walkthrough did
is checked on the instance itself: the process deployed, its run rolled back, the delete approved.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.turbobase.live import ROOT, Instance

pytestmark = pytest.mark.workers

README = ROOT / "README.md"
FENCE = re.compile(r"^```sh first-hour\n(.*?)^```$", re.MULTILINE | re.DOTALL)
EXPECTED = "# → "
PROCESS = "app:purchase-order-then-vendor-bill"


def walkthrough() -> str:
    """README's first-hour blocks, in order, as one script."""
    blocks = FENCE.findall(README.read_text())
    assert len(blocks) >= 6, "README lost its first-hour blocks"
    return "\n".join(blocks)


def expectations(script: str, base: str) -> list[re.Pattern[str]]:
    found = []
    for line in script.splitlines():
        if line.startswith(EXPECTED):
            text = line[len(EXPECTED) :].replace("http://127.0.0.1:8000", base)
            found.append(re.compile(".*".join(re.escape(part) for part in text.split("…"))))
    return found


def clone_make(tmp: Path) -> Path:
    """A folder laid out as a clone after ``make run``: ``manage.py``, ``.venv`` and ``var/``."""
    clone = tmp / "clone"
    (clone / "var").mkdir(parents=True)
    (clone / "manage.py").symlink_to(ROOT / "manage.py")
    venv = ROOT / ".venv" if (ROOT / ".venv" / "bin" / "activate").exists() else Path(sys.prefix)
    (clone / ".venv").symlink_to(venv.resolve())
    return clone


def test_expectations_read_readme_as_written():
    script = walkthrough()
    assert "turbobase ext new process" in script and "cd ../my-project" in script
    patterns = expectations(script, "http://127.0.0.1:9999")
    assert len(patterns) >= 10
    assert patterns[0].search("ok — http://127.0.0.1:9999 (postgresql)")
    assert not patterns[0].search("ok — http://127.0.0.1:8000 (sqlite)")


def test_the_first_hour_runs_as_written(fresh: Instance, tmp_path):
    script = walkthrough()
    clone = clone_make(tmp_path)
    env = {k: v for k, v in fresh.env.items() if not k.startswith("TURBOBASE_")}
    env.update(
        PORT=fresh.base.rsplit(":", 1)[1], PYTHONPATH=str(ROOT), DATABASE_URL=fresh.database_url
    )
    done = subprocess.run(
        ["bash", "-c", "set -eo pipefail\n" + script],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    shown = f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    assert done.returncode == 0, shown
    lines = done.stdout.splitlines()
    at = 0
    for pattern in expectations(script, fresh.base):
        at = next((i for i in range(at, len(lines)) if pattern.search(lines[i])), -1)
        assert at >= 0, (
            f"README promises {pattern.pattern!r}; not in the output (in order)\n{shown}"
        )
        at += 1
    assert (tmp_path / "my-project" / "processes" / "purchase-order-then-vendor-bill.ts").exists()
    assert not (clone / "processes").exists()  # the project folder, never the clone, got it

    admin = fresh.manage("tb_token", "admin", "--scope", "data:read").stdout.strip()
    headers = {"Authorization": f"Bearer {admin}"}
    listed = requests.get(fresh.url("/v1/extensions"), headers=headers, timeout=60).json()
    assert {e["id"]: e["status"] for e in listed["extensions"]}[PROCESS] == "active"
    runs = requests.get(
        fresh.url(f"/v1/processes/{PROCESS}/runs"), headers=headers, timeout=60
    ).json()["runs"]
    assert [run["state"] for run in runs] == ["rolled_back"]
    held = requests.get(
        fresh.url("/v1/guardrails/held-deletes?recordType=customer"), headers=headers, timeout=60
    ).json()["heldDeletes"]
    assert [(h["status"], h["decidedBy"], h["note"]) for h in held] == [
        ("approved", "admin", "a duplicate")
    ]
    assert "sessionid" in (clone / "var" / "cookies.txt").read_text()  # step 3 really signed in

    # The demo project's config follows TURBOBASE_URL too: its plan, at this port, is unchanged.
    deploy = fresh.manage("tb_token", "admin", "--scope", "extensions:deploy").stdout.strip()
    planned = subprocess.run(
        [sys.executable, "-m", "turbobase.cli.main", "ext", "plan", "--to", "local"],
        cwd=ROOT / "demo",
        env={**env, "TURBOBASE_URL": fresh.base, "TURBOBASE_TOKEN": deploy},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert planned.returncode == 0, planned.stderr
    lines = planned.stdout.splitlines()
    assert lines[0] == f"plan for local ({fresh.base}):"
    demo = [line for line in lines[1:] if not line.startswith("undeclared ")]
    assert demo and all(line.startswith("unchanged ") for line in demo), planned.stdout
    assert [line.split()[1] for line in lines if line.startswith("undeclared ")] == [PROCESS]
