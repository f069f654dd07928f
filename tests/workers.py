"""Real django-q2 workers for tests: ``manage.py qcluster`` subprocesses on the test database.

Use from a test marked ``@pytest.mark.workers`` and ``@pytest.mark.django_db(transaction=True)``
(the workers are other processes: they only see committed rows). A fixture wraps it per room,
e.g. ``tests/sources/conftest.py::qcluster``::

    with QCluster(workers=2, log_path=tmp_path / "qcluster.log") as cluster:
        ...  # enqueue work, wait for its effects in the database

The cluster inherits the test process's broker when it is the ORM broker (the queue then lives
in the test database, so parallel test runs on other databases never share a queue), the
catalog file in force (``settings.TURBOBASE_CATALOG``) and ``extra_env``. ``stop()`` sends
SIGTERM to the cluster (django-q2 finishes the tasks in hand) and SIGKILLs its process group if
it has not gone within ``stop_timeout`` seconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection

BASE_DIR = Path(__file__).resolve().parent.parent
LANES = ("turbobase", "tb_sync", "tb_async")  # what ``manage.py qcluster`` starts


def worker_database_url() -> str:
    """A DATABASE_URL naming the database this test runs on (call inside a test)."""
    params = connection.settings_dict
    if connection.vendor == "sqlite":
        name = str(params["NAME"])
        if name == ":memory:" or name.startswith("file:") or "mode=memory" in name:
            raise RuntimeError("worker tests need a SQLite file database (set TEST NAME to a file)")
        return "sqlite:///" + str(Path(name).resolve())
    if connection.vendor == "postgresql":
        user = quote(params.get("USER") or "postgres", safe="")
        password = quote(params.get("PASSWORD") or "", safe="")
        auth = f"{user}:{password}" if password else user
        host, port = params.get("HOST") or "127.0.0.1", params.get("PORT") or "5432"
        return f"postgres://{auth}@{host}:{port}/{quote(str(params['NAME']), safe='')}"
    raise RuntimeError(f"worker tests do not support {connection.vendor}")


class QCluster:
    """One ``manage.py qcluster`` process (with its django-q2 worker children)."""

    def __init__(
        self,
        *,
        workers: int = 2,
        log_path: Path,
        extra_env: dict[str, str] | None = None,
        ready_timeout: float = 180.0,  # a loaded 2-core machine took over 60 s to start one
        stop_timeout: float = 15.0,
    ) -> None:
        self.workers = workers
        self.log_path = Path(log_path)
        self.extra_env = dict(extra_env or {})
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self.process: subprocess.Popen | None = None

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            DATABASE_URL=worker_database_url(),
            TURBOBASE_WORKERS=str(self.workers),
            TURBOBASE_CATALOG=str(settings.TURBOBASE_CATALOG),
            PYTHONUNBUFFERED="1",
        )
        if "orm" in settings.Q_CLUSTER:
            env["TURBOBASE_BROKER"] = "orm"
        env.update(self.extra_env)
        return env

    def start(self, *, wait: bool = True) -> QCluster:
        """Start the cluster and return once every lane has run a task (or at once: ``wait=False``)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        try:
            self.process = subprocess.Popen(
                [sys.executable, str(BASE_DIR / "manage.py"), "qcluster"],
                cwd=BASE_DIR,
                env=self._env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            log.close()
        if not wait:
            return self
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self) -> None:
        """Round-trip one task through each lane's cluster (proves broker, workers and database agree)."""
        from django_q.models import Task
        from django_q.tasks import async_task

        lanes = (
            [self.extra_env["Q_CLUSTER_NAME"]]
            if "Q_CLUSTER_NAME" in self.extra_env
            else list(LANES)
        )
        task_ids = {async_task("math.floor", 1.5, save=True, cluster=lane) for lane in lanes}
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(
                    f"qcluster exited with {self.process.returncode}:\n{self.log_text()}"
                )
            if Task.objects.filter(id__in=task_ids).count() == len(task_ids):
                return
            time.sleep(0.1)
        raise TimeoutError(
            f"qcluster did not run a task on every lane within {self.ready_timeout:g}s:\n{self.log_text()}"
        )

    def lanes_running(self) -> int:
        """How many lane clusters have said they are running, in this log (django-q2 logs it at INFO)."""
        lines = self.log_text().splitlines()
        return sum(
            1 for line in lines if line.startswith("Q Cluster ") and line.endswith(" running.")
        )

    def stop(self) -> None:
        """Stop the cluster we started (SIGTERM, then SIGKILL of its own process group)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=self.stop_timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # the group is ours: start_new_session above
            process.wait(timeout=10)
        # A worker child the cluster left behind would keep the test database open.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)

    def kill(self) -> None:
        """SIGKILL the whole cluster at once, as a crashed machine would: no task is finished."""
        process, self.process = self.process, None
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    @property
    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def __enter__(self) -> QCluster:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()


# The worker tests' own database on the shared Redis (flushed before and after each use).
REDIS_TEST_URL = os.environ.get("TURBOBASE_TEST_REDIS", "redis://127.0.0.1:6379/13")


@contextmanager
def redis_broker(url: str = REDIS_TEST_URL) -> Iterator[dict[str, str]]:
    """Enqueue on Redis from this test process and yield the environment that puts the clusters
    on it too. django-q2 reads its broker from ``Conf`` on every enqueue, so patching it is enough."""
    import redis
    from django_q.conf import Conf

    redis.from_url(url).flushdb()
    try:
        with mock.patch.object(Conf, "ORM", None), mock.patch.object(Conf, "REDIS", url):
            yield {"TURBOBASE_BROKER": url}
    finally:
        redis.from_url(url).flushdb()


def wait_until(
    predicate, *, timeout: float, interval: float = 0.1, message: str = "condition"
) -> None:
    """Poll ``predicate`` until it is truthy, else fail naming ``message``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:g}s waiting for {message}")


def sweeping_until(
    predicate, *, timeout: float, interval: float = 0.5, message: str = "condition"
) -> None:
    """``wait_until``, running the engine's waits sweep before each look: it re-queues a run whose
    lease ran out as the minute sweep would (a django-q2 schedule in production; the test
    database's schedule rows are flushed by earlier transactional tests), so a fresh cluster takes
    a killed run without waiting out the broker's retry window."""
    from processes.engine.wakeups import waits_sweep

    def swept() -> bool:
        waits_sweep()
        return bool(predicate())

    wait_until(swept, timeout=timeout, interval=interval, message=message)


def postgres_workers(reason: str) -> list[pytest.MarkDecorator]:
    """The marks of a real-worker test that runs on PostgreSQL only; ``reason`` says why not on
    SQLite (the workers are other processes: the test commits what they should see)."""
    return [
        pytest.mark.workers,
        pytest.mark.postgres_only,
        pytest.mark.django_db(transaction=True),
        pytest.mark.skipif(connection.vendor != "postgresql", reason=reason),
    ]


# Correctness, not speed: one record type's writes go upstream one at a time, on cores the lanes
# share with the suite (a loaded machine once took over 60 s for the 400 writes of a kill test).
SETTLE_S = 180


def outbound_settled_wait() -> float:
    """Wait until no connected write is pending, running the outbound sweep meanwhile (the minute
    sweep, sooner: it frees a lane a killed drain held); answers the seconds it took."""
    from records.models import RecordWriteState, WriteStatus
    from sources.outbound import outbound_sweep

    def settled() -> bool:
        if not RecordWriteState.reads.filter(status=WriteStatus.PENDING).exists():
            return True
        outbound_sweep()
        return False

    started = time.monotonic()
    wait_until(settled, timeout=SETTLE_S, interval=0.5, message="every outbound write settled")
    return time.monotonic() - started
