"""One live instance (gunicorn + workers) shared by the tests that need a real server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.turbobase.live import (
    MANAGE,
    Instance,
    instance_running,
)


@pytest.fixture(scope="session")
def live(tmp_path_factory) -> Iterator[Instance]:
    """``tb_run`` on a database of its own: PostgreSQL when the suite runs on it, else SQLite.

    The PostgreSQL database does not exist beforehand: ``tb_prepare`` (what ``make run`` runs)
    creates it.
    """
    with instance_running(tmp_path_factory.mktemp("live"), "tb_live") as instance:
        yield instance


@pytest.fixture(scope="session")
def admin_token(live) -> str:
    """An administrator's token with every scope (as README's CLI section issues it)."""
    done = subprocess.run(
        [
            sys.executable,
            MANAGE,
            "tb_token",
            "admin",
            "--scope",
            "extensions:deploy",
            "--scope",
            "data:read",
            "--scope",
            "data:write",
        ],
        env=live.env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout.strip()
