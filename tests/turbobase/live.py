"""A real instance in subprocesses: ``tb_prepare`` → ``tb_demo`` → ``tb_run`` (gunicorn + qcluster).

Tests that need what only a real server shows — static files, the connection pool, signals, the
CLI as README prints it — start one here on a free loopback port against a database of their own
(a fresh PostgreSQL database on the suite's server, or a temporary SQLite file).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import psycopg
import requests

ROOT = Path(__file__).resolve().parents[2]
MANAGE = str(ROOT / "manage.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def suite_is_postgres() -> bool:
    return urlparse(os.environ.get("DATABASE_URL", "")).scheme in ("postgres", "postgresql")


def postgres_url(database: str, *, server: str | None = None) -> str:
    """``server`` (default: the suite's DATABASE_URL, else 127.0.0.1:5432) with another database."""
    base = urlparse(
        server or os.environ.get("DATABASE_URL", "") or "postgres://postgres@127.0.0.1:5432/x"
    )
    if base.scheme not in ("postgres", "postgresql"):
        base = urlparse("postgres://postgres@127.0.0.1:5432/x")
    return urlunparse(base._replace(path="/" + database))


def postgres_admin(url: str) -> psycopg.Connection:
    """A connection to the server's maintenance database (to drop or inspect a live database)."""
    parsed = urlparse(url)
    return psycopg.connect(
        host=parsed.hostname,
        port=parsed.port or 5432,
        user=parsed.username or "postgres",
        password=parsed.password or None,
        dbname="postgres",
        autocommit=True,
    )


def postgres_drop(url: str) -> None:
    name = urlparse(url).path.lstrip("/")
    with postgres_admin(url) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def connections_count(url: str) -> int:
    """Client connections to ``url``'s database right now, as PostgreSQL counts them."""
    name = urlparse(url).path.lstrip("/")
    with postgres_admin(url) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [name]
        ).fetchone()[0]


def unique_name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


@dataclass
class Instance:
    """One running ``tb_run``: its base URL, environment and log."""

    database_url: str
    workers: bool = True
    env: dict[str, str] = field(default_factory=dict)
    base: str = ""
    log_path: Path | None = None
    process: subprocess.Popen | None = None

    def manage(self, *argv: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, MANAGE, *argv],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )

    def start(self, tmp: Path, *, prepare: bool = True) -> Instance:
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        self.env = {
            **os.environ,
            "DATABASE_URL": self.database_url,
            "PORT": str(port),
            "PYTHONPATH": str(ROOT),
            "TURBOBASE_ACCESS_LOG": "",
            **self.env,
        }
        if prepare:
            self.manage("tb_prepare", "--no-static")
            self.manage("tb_demo")
        self.log_path = tmp / f"tb_run_{port}.log"
        with self.log_path.open("w") as log:
            argv = [sys.executable, MANAGE, "tb_run", *([] if self.workers else ["--no-workers"])]
            self.process = subprocess.Popen(
                argv, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        self.wait_up()
        return self

    def wait_up(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log()
            try:
                if (
                    requests.get(self.base + "/v1/health", timeout=30).status_code == 200
                    and "Ctrl-C" in self.log()
                ):
                    return
            except (requests.ConnectionError, requests.Timeout):
                pass
            time.sleep(0.3)
        raise AssertionError(f"tb_run did not come up:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path and self.log_path.exists() else ""

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 10) -> int:
        """Signal the launcher; its exit code (raises if it is still running after ``timeout``)."""
        if self.process.poll() is None:
            self.process.send_signal(signum)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise

    def url(self, path: str) -> str:
        return self.base + path


def descendant_pids(pid: int) -> list[int]:
    """Every live process below ``pid`` (children first), from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            if "\nState:\tZ" in status:
                continue
            ppid = int(status.split("\nPPid:\t", 1)[1].split("\n", 1)[0])
            parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_tree(instance: Instance) -> None:
    """Teardown after a failed test: SIGKILL the launcher and everything it started."""
    if instance.process is None:
        return
    for pid in [*descendant_pids(instance.process.pid), instance.process.pid]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    instance.process.wait()


@contextlib.contextmanager
def instance_running(tmp: Path, name: str) -> Iterator[Instance]:
    """``tb_run`` on a database of its own, named ``name`` (PostgreSQL when the suite runs on it,
    which ``tb_prepare`` creates; else SQLite in ``tmp``), stopped and its database dropped after."""
    postgres = suite_is_postgres()
    url = postgres_url(unique_name(name)) if postgres else f"sqlite:///{tmp}/{name}.sqlite3"
    instance = Instance(database_url=url)
    try:
        yield instance.start(tmp)
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired):
            instance.stop()
        kill_tree(instance)
        if postgres:
            postgres_drop(url)
