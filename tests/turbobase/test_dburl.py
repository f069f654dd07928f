"""DATABASE_URL → DATABASES: a bounded pool for web processes on PostgreSQL, none anywhere else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.turbobase.live import ROOT
from turbobase.dburl import database_from_url

URL = "postgres://tb:secret@db.example:6543/turbobase"


def test_a_web_process_pools_at_most_pool_size_connections_with_conn_max_age_0():
    database = database_from_url(URL, base_dir=Path("/srv"), pool_size=4)
    assert database["CONN_MAX_AGE"] == 0  # Django refuses a pool with persistent connections
    assert database["OPTIONS"] == {
        "connect_timeout": "5",
        "pool": {
            "min_size": 1,
            "max_size": 4,
            "timeout": 5.0,
            "max_idle": 20.0,
            "reconnect_timeout": 10.0,
        },
    }
    assert (database["HOST"], database["PORT"], database["USER"], database["NAME"]) == (
        "db.example",
        "6543",
        "tb",
        "turbobase",
    )


def test_without_a_pool_size_each_process_keeps_one_persistent_connection():
    database = database_from_url(URL + "?connect_timeout=2", base_dir=Path("/srv"))
    assert "pool" not in database["OPTIONS"]
    assert database["OPTIONS"]["connect_timeout"] == "2"
    assert database["CONN_MAX_AGE"] == int(os.environ.get("CONN_MAX_AGE", "60"))


def test_sqlite_never_pools():
    database = database_from_url("sqlite:///var/x.sqlite3", base_dir=Path("/srv"), pool_size=4)
    assert database["ENGINE"] == "django.db.backends.sqlite3"
    assert "pool" not in database["OPTIONS"] and "CONN_MAX_AGE" not in database


def _settings_in(argv: list[str]) -> dict:
    code = (
        f"import sys; sys.argv = {argv!r}\n"
        "import django, json; django.setup()\n"
        "from django.conf import settings\n"
        "d = settings.DATABASES['default']\n"
        "print(json.dumps({'age': d['CONN_MAX_AGE'], 'pool': d['OPTIONS'].get('pool')}))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "turbobase.settings",
        "DATABASE_URL": URL,
        "TURBOBASE_DB_POOL_SIZE": "3",
    }
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_qcluster_never_pools_even_when_the_pool_size_is_set():
    assert _settings_in(["manage.py", "qcluster"])["pool"] is None
    assert _settings_in(["gunicorn"])["pool"]["max_size"] == 3
