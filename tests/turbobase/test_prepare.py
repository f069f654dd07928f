"""``manage.py tb_prepare`` (``make run``'s first step): a PostgreSQL database that does not exist
yet is created, then migrated — instead of ``migrate``'s traceback."""

from __future__ import annotations

import subprocess
import sys

import psycopg
import pytest

from tests.turbobase.live import (
    MANAGE,
    ROOT,
    postgres_admin,
    postgres_drop,
    postgres_url,
    suite_is_postgres,
    unique_name,
)


def _prepare(url: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "DATABASE_URL": url}
    return subprocess.run(
        [sys.executable, MANAGE, "tb_prepare", "--no-static"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.postgres_only
@pytest.mark.skipif(not suite_is_postgres(), reason="creates a PostgreSQL database")
def test_a_missing_database_is_created_and_migrated_and_a_second_run_changes_nothing():
    name = unique_name("tb_prepare")
    url = postgres_url(name)
    try:
        first = _prepare(url)
        assert (first.returncode, first.stderr) == (0, "")
        assert first.stdout == f"created PostgreSQL database '{name}'\n"
        with psycopg.connect(url.replace("postgres://", "postgresql://")) as conn:
            applied = conn.execute(
                "SELECT count(*) FROM django_migrations WHERE app = 'records'"
            ).fetchone()[0]
        assert applied > 0
        again = _prepare(url)
        assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
        with postgres_admin(url) as conn:
            assert conn.execute(
                "SELECT count(*) FROM pg_database WHERE datname = %s", [name]
            ).fetchone() == (1,)
    finally:
        postgres_drop(url)


def test_make_migrate_runs_tb_prepare():
    shown = subprocess.run(
        ["make", "-n", "migrate"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    assert "manage.py tb_prepare --no-static" in shown.stdout
