"""``tools/lint_shape.py``: the size and import-cycle check ``make lint`` runs over the rooms."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "lint_shape.py"


def _run(root: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(TOOL), *([str(root)] if root is not None else [])]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def _write(root: Path, path: str, text: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def _function(name: str, body_lines: int) -> str:
    return f"def {name}():\n" + "    x = 1\n" * (body_lines - 1) + "    return x\n"


def _tidy_tree(root: Path) -> None:
    _write(root, "kernel/__init__.py", "")
    _write(root, "kernel/a.py", "from kernel import b\n")
    _write(root, "kernel/b.py", "import json\n")
    _write(root, "processes/__init__.py", "")
    _write(root, "processes/fits.py", _function("fits", 59))  # def + 59 lines: 60


def test_a_tidy_tree_passes(tmp_path):
    _tidy_tree(tmp_path)
    done = _run(tmp_path)
    assert (done.returncode, done.stdout) == (0, "")


def test_an_import_cycle_fails_naming_both_imports(tmp_path):
    _tidy_tree(tmp_path)
    _write(tmp_path, "kernel/b.py", "import json\n\nfrom kernel.a import thing\n")
    done = _run(tmp_path)
    assert done.returncode == 1
    assert "kernel/a.py:1: import cycle: kernel.a imports kernel.b" in done.stdout
    assert "kernel/b.py:3: import cycle: kernel.b imports kernel.a" in done.stdout


def test_an_import_under_type_checking_or_in_a_function_is_no_cycle(tmp_path):
    _tidy_tree(tmp_path)
    _write(
        tmp_path,
        "kernel/b.py",
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from kernel.a import x\n\n\n"
        "def late():\n    from kernel import a\n\n    return a\n",
    )
    assert _run(tmp_path).returncode == 0


def test_a_long_function_and_a_long_module_fail(tmp_path):
    _tidy_tree(tmp_path)
    method = "    def walk(self):\n" + "        x = 1\n" * 59 + "        return x\n"  # 61 lines
    _write(tmp_path, "processes/long.py", "class Runner:\n" + method)
    _write(tmp_path, "records/big.py", "x = 1\n" * 401)
    done = _run(tmp_path)
    assert done.returncode == 1
    assert "processes/long.py:2: function Runner.walk has 61 lines (limit 60)" in done.stdout
    assert "records/big.py:401: module has 401 lines (limit 400)" in done.stdout


def test_tests_and_migrations_are_left_out(tmp_path):
    _tidy_tree(tmp_path)
    _write(tmp_path, "processes/migrations/0001_initial.py", "x = 1\n" * 500)
    _write(tmp_path, "kernel/tests/test_long.py", _function("test_long", 80))
    assert _run(tmp_path).returncode == 0


def test_the_repository_passes():
    done = _run()
    assert done.returncode == 0, done.stdout
