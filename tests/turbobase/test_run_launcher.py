"""``manage.py tb_run`` (what ``make run`` ends in): gunicorn and the workers up; Ctrl-C or SIGTERM
stops everything, gracefully, within 10 s."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
import requests

from tests.turbobase.live import Instance, descendant_pids, kill_tree

pytestmark = pytest.mark.workers

STOP_LIMIT_S = 10


def _commands(pids: list[int]) -> list[str]:
    found = []
    for pid in pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        found.append(" ".join(a.decode() for a in argv[1:4] if a))
    return found


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_tb_run_serves_with_gunicorn_and_a_signal_stops_everything_within_10_s(tmp_path, signum):
    prometheus = tmp_path / "prometheus"  # an earlier start's metric files: tb_run empties it
    prometheus.mkdir()
    (prometheus / "counter_999999.db").write_bytes(b"an earlier start's counts")
    instance = Instance(
        database_url=f"sqlite:///{tmp_path}/run.sqlite3",
        env={"PROMETHEUS_MULTIPROC_DIR": str(prometheus)},
    )
    try:
        instance.start(tmp_path)
        assert not (prometheus / "counter_999999.db").exists()
        health = requests.get(instance.url("/v1/health"), timeout=30)
        assert health.json() == {"status": "ok", "database": "sqlite"}
        signed_in = requests.post(
            instance.url("/v1/auth/session"),
            json={"username": "demo", "password": "demo"},
            timeout=30,
        )
        assert signed_in.status_code == 200
        launched = descendant_pids(instance.process.pid)
        commands = _commands(launched)
        assert (
            sum(c.startswith("-m gunicorn --config") for c in commands) == 3
        )  # master + 2 workers
        assert any(c.endswith("manage.py qcluster") for c in commands)
        assert not any("runserver" in c for c in commands)

        started = time.monotonic()
        code = instance.stop(signum, timeout=STOP_LIMIT_S)
        took = time.monotonic() - started
    finally:
        kill_tree(instance)
    output = instance.log()
    assert code == 0, output
    assert took < STOP_LIMIT_S
    assert f"Turbobase is up at {instance.base}/" in output
    assert "sign in   admin / admin (administrator), demo / demo" in output
    assert (
        "Handling signal: term" in output and "Shutting down: Master" in output
    )  # gunicorn drained
    assert output.rstrip().endswith("stopped")
    assert not [
        pid
        for pid in launched
        if Path(f"/proc/{pid}").exists()
        and "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    ]
    with pytest.raises(requests.ConnectionError):
        requests.get(instance.url("/v1/health"), timeout=5)
