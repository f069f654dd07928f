"""One live instance (gunicorn + workers) shared by the tests that need a real server."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.turbobase.live import (
    MANAGE,
    Instance,
    kill_tree,
    postgres_drop,
    postgres_url,
    suite_is_postgres,
    unique_name,
)


@pytest.fixture(scope="session")
def live(tmp_path_factory) -> Iterator[Instance]:
    """``tb_run`` on a database of its own: PostgreSQL when the suite runs on it, else SQLite.

    The PostgreSQL database does not exist beforehand: ``tb_prepare`` (what ``make run`` runs)
    creates it.
    """
    tmp = tmp_path_factory.mktemp("live")
    url = (
        postgres_url(unique_name("tb_live"))
        if suite_is_postgres()
        else f"sqlite:///{tmp}/live.sqlite3"
    )
    instance = Instance(database_url=url)
    try:
        yield instance.start(tmp)
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired):
            instance.stop()
        kill_tree(instance)
        if suite_is_postgres():
            postgres_drop(url)


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
