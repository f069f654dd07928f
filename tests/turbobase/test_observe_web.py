"""The web side for real: gunicorn with two worker processes, over HTTP (issue 22, items 3, 4, 6).

The requests are counted in a scrape whichever worker answered it (multiprocess mode; the
aggregation across processes itself is ``test_metrics_multiprocess``), the probes answer, and
with ``TURBOBASE_LOG_FORMAT=json`` every line gunicorn and Django write is one JSON object; a
request's own log line carries its ``request_id``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import requests

from tests.turbobase.live import ROOT, free_port
from tests.turbobase.metrics_support import samples_of, value
from tests.workers import worker_database_url

pytestmark = pytest.mark.django_db(transaction=True)

ROUTE = {"route": "v1/health/live", "method": "GET", "status": "200"}


def _wait_answering(base: str, server: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.poll() is None, "gunicorn exited"
        try:
            requests.get(f"{base}/v1/health/live", timeout=10)
            return
        except requests.RequestException:  # not listening yet, or a worker still booting
            time.sleep(0.2)
    raise AssertionError("gunicorn did not answer")


def test_two_gunicorn_workers_count_into_one_scrape_and_log_json(tmp_path):
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": worker_database_url(),
        "WEB_CONCURRENCY": "2",
        "TURBOBASE_WEB_THREADS": "1",
        "TURBOBASE_LOG_FORMAT": "json",
        "LOG_LEVEL": "INFO",
        "TURBOBASE_METRICS_ALLOW": "127.0.0.1",
    }
    out, err = tmp_path / "out.log", tmp_path / "err.log"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "--config",
                str(ROOT / "turbobase" / "gunicorn_conf.py"),
                "--bind",
                f"127.0.0.1:{port}",
                "turbobase.wsgi",
            ],
            cwd=ROOT,
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_answering(base, server)
        before = samples_of(requests.get(f"{base}/metrics", timeout=10).text)
        for _ in range(20):  # new connections: both workers take some
            res = requests.get(
                f"{base}/v1/health/live", headers={"Connection": "close"}, timeout=10
            )
            assert res.status_code == 200 and len(res.headers["X-Request-ID"]) == 32
        after = samples_of(requests.get(f"{base}/metrics", timeout=10).text)
        missing = requests.get(
            f"{base}/v1/nowhere", headers={"X-Request-ID": "probe-1"}, timeout=10
        )
        assert missing.status_code == 404 and missing.headers["X-Request-ID"] == "probe-1"
        ready = requests.get(f"{base}/v1/health/ready", timeout=10)
        assert ready.status_code == 503 and ready.json()["checks"]["workers"]["ok"] is False
        assert requests.get(f"{base}/v1/health/live", timeout=10).status_code == 200
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)

    key = "turbobase_http_requests_total"
    assert value(after, key, **ROUTE) - value(before, key, **ROUTE) == 20
    booted = [line for line in err.read_text().splitlines() if "Booting worker" in line]
    assert len(booted) == 2, err.read_text()
    lines = [line for path in (out, err) for line in path.read_text().splitlines() if line.strip()]
    parsed = [json.loads(line) for line in lines]  # every line one JSON object
    assert any(p.get("logger") == "gunicorn.access" for p in parsed)
    not_found = [p for p in parsed if p.get("request_id") == "probe-1"]
    assert not_found and not_found[0]["level"] == "WARNING", not_found
    # A probe's "not ready" is no server error: nothing at ERROR.
    assert not [p for p in parsed if p["level"] == "ERROR"], parsed
