"""``manage.py tb_run`` (what ``make run`` ends in): web and workers up, Ctrl-C stops them all."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from django.conf import settings

pytestmark = pytest.mark.workers

MANAGE = str(Path(settings.BASE_DIR) / "manage.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def child_pids(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            if f"\nPPid:\t{pid}\n" in status:
                found.append(int(entry.name))
    return found


def is_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in state


def test_tb_run_starts_web_and_workers_and_ctrl_c_stops_both(tmp_path):
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path}/run.sqlite3", "PORT": str(free_port())}
    subprocess.run([sys.executable, MANAGE, "migrate", "-v0"], env=env, check=True, timeout=120)
    subprocess.run([sys.executable, MANAGE, "tb_demo"], env=env, check=True, timeout=60,
                   stdout=subprocess.DEVNULL)
    launcher = subprocess.Popen([sys.executable, MANAGE, "tb_run"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{env['PORT']}"
    try:
        deadline = time.monotonic() + 60
        health = None
        while time.monotonic() < deadline and health is None:
            try:
                health = requests.get(base + "/v1/health", timeout=2)
            except requests.ConnectionError:
                time.sleep(0.3)
        assert health is not None and health.json() == {"status": "ok", "database": "sqlite"}
        signed_in = requests.post(base + "/v1/auth/session", json={"username": "demo", "password": "demo"},
                                  timeout=5)
        assert signed_in.status_code == 200
        children = child_pids(launcher.pid)
        commands = sorted(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[2].decode() for pid in children)
        assert commands == ["qcluster", "runserver"]
    finally:
        launcher.send_signal(signal.SIGINT)
        output, _ = launcher.communicate(timeout=60)
    assert launcher.returncode == 0, output
    assert f"Turbobase is up at {base}/" in output
    assert "sign in   admin / admin (administrator), demo / demo" in output
    assert output.rstrip().endswith("stopped")
    assert not [pid for pid in children if is_alive(pid)]
    with pytest.raises(requests.ConnectionError):
        requests.get(base + "/v1/health", timeout=2)
