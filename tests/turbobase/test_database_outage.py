"""PostgreSQL goes away under a live server: health and the API answer a JSON, retryable 503 — never
Django's HTML 500 — and both recover by themselves when it is back.

The server runs on a throwaway PostgreSQL cluster of this test's own (initdb in a temporary
directory, a free port), which the test stops and starts; the shared server is never touched.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.turbobase.live import (
    MANAGE,
    Instance,
    descendant_pids,
    free_port,
    kill_tree,
    suite_is_postgres,
)

pytestmark = [
    pytest.mark.workers,
    pytest.mark.postgres_only,
    pytest.mark.skipif(not suite_is_postgres(), reason="runs in the PostgreSQL pass of the suite"),
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("runuser") is None,
        reason="starts a PostgreSQL cluster as the postgres user (needs root)",
    ),
]


def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}")) or [shutil.which(name)]
    assert found[-1], f"{name} not found"
    return found[-1]


class OwnPostgres:
    """A PostgreSQL cluster in a temporary directory, run as the postgres user."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="tb_pg_"))
        shutil.chown(self.dir, "postgres", "postgres")
        self.data = self.dir / "data"
        self._as_postgres(
            _pg_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync"
        )

    def _as_postgres(self, *argv: str) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", *argv], check=True, capture_output=True, timeout=120
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._as_postgres(
            _pg_bin("pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.dir / "log"),
            "-w",
            "start",
        )

    def stop(self) -> None:
        self._as_postgres(_pg_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"


@pytest.fixture
def own_postgres() -> Iterator[OwnPostgres]:
    server = OwnPostgres()
    try:
        server.start()
        yield server
    finally:
        server.remove()


def _until(predicate, timeout: float = 90) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.5)
    return False


def _health_ok(instance: Instance) -> bool:
    with contextlib.suppress(requests.RequestException):
        return requests.get(instance.url("/v1/health"), timeout=30).status_code == 200
    return False


def _workers_up(instance: Instance) -> bool:
    """Every lane's cluster is running: launcher → qcluster → 3 lanes × (main, sentinel, 2 workers,
    pusher, monitor). A lane still starting needs the database and gives up without it."""
    pids = descendant_pids(instance.process.pid)
    cmdlines = []
    for pid in pids:
        with contextlib.suppress(OSError):
            cmdlines.append(Path(f"/proc/{pid}/cmdline").read_bytes())
    return sum(b"qcluster" in c for c in cmdlines) >= 1 + 3 * 6


def _honouring_retry_after(send, timeout: float = 60) -> requests.Response:
    """What a client that honours ``Retry-After`` gets: a process whose pool is still reconnecting
    answers 503 for a moment after the database is back."""
    deadline = time.monotonic() + timeout
    answer = send()
    while answer.status_code == 503 and time.monotonic() < deadline:
        time.sleep(int(answer.headers["Retry-After"]))
        answer = send()
    return answer


def _assert_unavailable(answer: requests.Response) -> None:
    assert answer.status_code == 503, answer.text[:300]
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.headers["Retry-After"] == "5"
    assert answer.json() == {
        "error": "database_unavailable",
        "message": "the database cannot be reached right now; retry shortly",
    }


def test_an_outage_is_a_json_503_and_the_server_recovers_by_itself(own_postgres, tmp_path):
    instance = Instance(database_url=own_postgres.url("tb_outage"))  # tb_prepare creates it
    try:
        instance.start(tmp_path)
        token = subprocess.run(
            [
                sys.executable,
                MANAGE,
                "tb_token",
                "admin",
                "--scope",
                "data:read",
                "--scope",
                "data:write",
            ],
            env=instance.env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout.strip()
        auth = {"Authorization": f"Bearer {token}"}
        read = instance.url("/v1/rest/legacy_customer?select=company_name&order=company_name")
        assert requests.get(read, headers=auth, timeout=30).status_code == 200
        assert _until(lambda: _workers_up(instance)), instance.log()[-3000:]
        time.sleep(3)  # the pushers' first polls

        own_postgres.stop()
        _assert_unavailable(requests.get(instance.url("/v1/health"), timeout=60))
        _assert_unavailable(requests.get(read, headers=auth, timeout=60))
        _assert_unavailable(
            requests.post(
                instance.url("/v1/data/legacy_customer"),
                headers=auth,
                timeout=60,
                json={"parent": {"company_name": "Down", "legacy_id": "L-DOWN"}},
            )
        )
        _assert_unavailable(
            requests.post(
                instance.url("/v1/auth/session"),
                timeout=60,
                json={"username": "demo", "password": "demo"},
            )
        )
        home = requests.get(instance.url("/"), timeout=60)
        assert home.status_code == 503
        assert "Unhealthy: the postgresql database cannot be reached" in home.text

        own_postgres.start()
        # Each web process's pool reconnects on its own: soon every request, whichever process
        # takes it, is answered again.
        assert _until(lambda: all(_health_ok(instance) for _ in range(8))), instance.log()[-3000:]
        created = _honouring_retry_after(
            lambda: requests.post(
                instance.url("/v1/data/legacy_customer"),
                headers=auth,
                timeout=60,
                json={"parent": {"company_name": "Back", "legacy_id": "L-BACK"}},
            )
        )
        assert created.status_code == 201, created.text
        names = _honouring_retry_after(lambda: requests.get(read, headers=auth, timeout=30))
        assert names.status_code == 200
        assert "Back" in [row["company_name"] for row in names.json()]
        assert "Down" not in [row["company_name"] for row in names.json()]
        assert requests.get(instance.url("/"), timeout=30).status_code == 200
        assert "Internal Server Error" not in instance.log()
        assert instance.process.poll() is None, instance.log()[-3000:]  # workers rode it out too
        code = instance.stop()
    finally:
        kill_tree(instance)
    assert code == 0, instance.log()[-3000:]
