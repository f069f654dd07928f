"""Read-your-writes for instance settings across web processes, on real gunicorn servers.

Two more gunicorns, one worker process each, serve the live instance's database on ports of their
own: a PATCH answered 200 by one is seen by the very next GET answered by the other, every time —
though each process caches the settings table (re-read about once a second).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import requests

from tests.turbobase.live import ROOT, Instance, free_port

KEY = "processes.batch_max_rows"  # read by no background work: only these requests touch it
ROUNDS = 60


@contextlib.contextmanager
def _gunicorn(live: Instance, tmp: Path) -> Iterator[str]:
    """One more web server (gunicorn, one worker process) on the live instance's database."""
    port = free_port()
    log = (tmp / f"gunicorn_{port}.log").open("w")
    env = {**live.env, "WEB_CONCURRENCY": "1", "PORT": str(port)}
    argv = [sys.executable, "-m", "gunicorn", "--config", "turbobase/gunicorn_conf.py"]
    process = subprocess.Popen(
        [*argv, "--chdir", str(ROOT), "turbobase.wsgi"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (tmp / f"gunicorn_{port}.log").read_text()
            with contextlib.suppress(requests.ConnectionError):
                if requests.get(base + "/v1/health", timeout=10).status_code == 200:
                    break
            assert time.monotonic() < deadline, "gunicorn did not come up"
            time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _value(session: requests.Session, base: str) -> int:
    res = session.get(base + "/v1/settings", timeout=30)
    assert res.status_code == 200, res.text
    return next(row["value"] for row in res.json()["settings"] if row["key"] == KEY)


def test_a_get_after_a_200_patch_in_another_process_sees_the_new_value(live, admin_token, tmp_path):
    with _gunicorn(live, tmp_path) as writer, _gunicorn(live, tmp_path) as reader:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {admin_token}"
        _value(session, reader)  # the reader's cache is warm from here on
        stale = []
        for n in range(ROUNDS):
            wanted = 100 + n
            patched = session.patch(writer + "/v1/settings", json={KEY: wanted}, timeout=30)
            assert patched.status_code == 200, patched.text
            # The reader has read (and cached) the setting well within its one-second TTL.
            seen = _value(session, reader)
            if seen != wanted:
                stale.append((wanted, seen))
        back = session.patch(writer + "/v1/settings", json={KEY: None}, timeout=30)
        assert back.status_code == 200
    assert stale == [], f"{len(stale)} of {ROUNDS} reads were stale: {stale[:5]}"
