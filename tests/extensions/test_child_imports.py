"""The child processes that run JavaScript load no Django and no project module beyond the child
modules: author code shares its process with nothing of the host."""

from __future__ import annotations

import json
import subprocess

import pytest

from extensions.child_process import PROJECT_ROOT, SANDBOX_CHILD, child_command

# The project modules a child may load: its own, the ones it shares, and their packages.
ALLOWED = {
    "extensions",
    "extensions.child_channel",
    "extensions.child_confine",
    "extensions.codes",
    "extensions.sandbox_child",
    "extensions.sandbox_faults",
    "extensions.transpile_child",
    "extensions.value_depth",
}
ROOMS = ("kernel", "extensions", "guardrails", "records", "sources", "processes", "turbobase")
# Runs the child's own bootstrap (child_command), then reports what is loaded instead of serving.
REPORT = "import json, sys; print(json.dumps(sorted(sys.modules)))"


def _loaded_by(module: str) -> list[str]:
    command = child_command(module, "512", "60")
    # The bootstrap's last statement starts the child's main loop; report what is loaded then.
    bootstrap = command[4].replace("sys.exit(main(sys.argv))", REPORT)
    assert bootstrap != command[4]
    done = subprocess.run(
        [*command[:4], bootstrap, *command[5:]],
        capture_output=True,
        env={},
        cwd="/",
        timeout=60,
        check=True,
    )
    loaded: list[str] = json.loads(done.stdout)
    return loaded


@pytest.mark.parametrize("module", [SANDBOX_CHILD, "extensions.transpile_child"])
def test_a_child_loads_no_django_and_only_the_child_modules(module):
    loaded = _loaded_by(module)
    assert module in loaded and "dukpy" in loaded  # the report saw the child's imports
    assert [name for name in loaded if name.split(".")[0] == "django"] == []
    project = {name for name in loaded if name.split(".")[0] in ROOMS}
    assert sorted(project - ALLOWED) == []


def test_a_child_loads_the_project_it_was_spawned_from():
    """The bootstrap puts this checkout first on ``sys.path``, ahead of any installed copy."""
    command = child_command(SANDBOX_CHILD)
    report = "import extensions, json; print(json.dumps(extensions.__path__[0]))"
    bootstrap = command[4].replace(
        f"from {SANDBOX_CHILD} import main; sys.exit(main(sys.argv))", report
    )
    done = subprocess.run(
        [*command[:4], bootstrap], capture_output=True, env={}, cwd="/", timeout=60, check=True
    )
    assert json.loads(done.stdout) == str(PROJECT_ROOT / "extensions")
