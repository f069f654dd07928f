"""Sync bench: ``POST /v1/processes/<id>?mode=sync`` of a three-create process over real HTTP, against
three ``POST /v1/data/legacy_customer`` in a row doing the same writes, in the same run.

The bench starts gunicorn (``turbobase/gunicorn_conf.py``, as ``tb_run`` does) and ``manage.py
qcluster`` on the bench database (the ORM broker, so the queue lives there too), waits until a sync
invoke settles, measures INVOKES of each interleaved, and stops both (SIGTERM, then SIGKILL of their
own process groups). Requests carry a bearer token with every scope, over one keep-alive session.
A sync run is delivered on its request (``processes/sync_run.py``); the bench also reports how
long the runs themselves took (row written → run ended), the engine's share of an invoke.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import requests
from django.contrib.auth import get_user_model
from django.db import connection

from extensions.deploy import extension_deploy
from kernel.models import SCOPES, token_issue
from processes.models import ProcessRun

ROOT = Path(__file__).resolve().parent.parent
PROCESS_ID = "bench:sync-three"
SOURCE = """import { defineProcess } from '@turbobase/extensions';

export default defineProcess({
  id: '__ID__',
  input: { type: 'object' },
  steps: [
    { id: 'a', recordType: 'legacy_customer', build: (ctx) => ({ parent: { n: 1, run: ctx.runId } }) },
    { id: 'b', recordType: 'legacy_customer', build: (ctx) => ({ parent: { n: 2, run: ctx.runId } }) },
    { id: 'c', recordType: 'legacy_customer', build: (ctx) => ({ parent: { n: 3, run: ctx.runId } }) },
  ],
});
""".replace("__ID__", PROCESS_ID)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def bench_database_url() -> str:
    s = connection.settings_dict
    auth = s.get("USER") or "postgres"
    if s.get("PASSWORD"):
        auth += ":" + s["PASSWORD"]
    return f"postgres://{auth}@{s.get('HOST') or '127.0.0.1'}:{s.get('PORT') or 5432}/{s['NAME']}"


def stop(process: subprocess.Popen) -> None:
    """SIGTERM the child; SIGKILL its own process group (start_new_session) if it lingers or leaves any."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


@contextlib.contextmanager
def instance(port: int, log_path: Path) -> Iterator[None]:
    env = dict(
        os.environ, DATABASE_URL=bench_database_url(), TURBOBASE_BROKER="orm", PYTHONUNBUFFERED="1"
    )
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
    )
    log_path.parent.mkdir(parents=True, exist_ok=True)
    argvs = [
        [
            sys.executable,
            "-m",
            "gunicorn",
            "--config",
            str(ROOT / "turbobase" / "gunicorn_conf.py"),
            "--chdir",
            str(ROOT),
            "--bind",
            f"127.0.0.1:{port}",
            "turbobase.wsgi",
        ],
        [sys.executable, str(ROOT / "manage.py"), "qcluster"],
    ]
    children = []
    with log_path.open("ab") as log:
        try:
            for argv in argvs:
                children.append(
                    subprocess.Popen(
                        argv,
                        cwd=ROOT,
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        start_new_session=True,
                    )
                )
            yield
        finally:
            connection.close()
            for child in children:
                stop(child)


def wait_settled(session: requests.Session, url: str, *, timeout: float, log_path: Path) -> None:
    """Invoke until one sync invoke answers 200 committed: web, workers and database agree."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            res = session.post(url, json={}, timeout=30)
            if res.status_code == 200 and res.json().get("state") == "committed":
                return
            last = f"{res.status_code} {res.text[:200]}"
        except requests.ConnectionError as exc:
            last = str(exc)[:200]
        time.sleep(0.5)
    tail = log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""
    raise TimeoutError(f"no sync invoke settled within {timeout:g}s (last: {last})\n{tail}")


def sync_bench(*, invokes: int = 30, detail: dict | None = None) -> dict:
    """The RESULT line's figures; ``detail`` (if given) also gets ``run_p50_ms``: the runs' own
    time, from the row written to the run ended."""
    user = get_user_model().objects.create_superuser(
        username="bench-sync", password="bench", email=""
    )
    extension_deploy(entry="processes/sync.ts", files={"processes/sync.ts": SOURCE}, by=user)
    _, raw = token_issue(user=user, scopes=list(SCOPES), name="bench")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = ROOT / "var" / "bench-sync.log"
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {raw}"
    invoke_url = f"{base}/v1/processes/{PROCESS_ID}?mode=sync"
    with instance(port, log_path):
        wait_settled(session, invoke_url, timeout=180, log_path=log_path)
        invoke_ms, plain_ms = [], []
        for i in range(invokes):
            started = time.perf_counter()
            res = session.post(invoke_url, json={}, timeout=60)
            invoke_ms.append((time.perf_counter() - started) * 1000)
            if res.status_code != 200 or res.json().get("state") != "committed":
                raise RuntimeError(f"sync invoke answered {res.status_code}: {res.text[:300]}")
            started = time.perf_counter()
            for n in (1, 2, 3):
                res = session.post(
                    f"{base}/v1/data/legacy_customer",
                    json={"parent": {"n": n, "run": f"plain-{i}"}},
                    timeout=60,
                )
                if res.status_code != 201:
                    raise RuntimeError(
                        f"POST /v1/data answered {res.status_code}: {res.text[:300]}"
                    )
            plain_ms.append((time.perf_counter() - started) * 1000)
    invoke_p50, plain_p50 = statistics.median(invoke_ms), statistics.median(plain_ms)
    if detail is not None:
        ended = ProcessRun.objects.filter(process_id=PROCESS_ID, finished_at__isnull=False)
        spans = [
            (finished - created).total_seconds() * 1000
            for created, finished in ended.order_by("-created_at").values_list(
                "created_at", "finished_at"
            )[:invokes]
            if finished is not None
        ]
        detail["run_p50_ms"] = round(statistics.median(spans), 1)
    return {
        "bench": "sync",
        "invoke_p50_ms": round(invoke_p50, 1),
        "plain_p50_ms": round(plain_p50, 1),
        "ratio": round(invoke_p50 / plain_p50, 2),
    }
