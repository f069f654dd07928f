"""``manage.py tb_run``: the web server (gunicorn) and the django-q2 workers together, in the foreground.

``make run`` ends here. Each child runs in its own session so a Ctrl-C reaches only this launcher,
which then sends one SIGTERM to each child's main process — gunicorn's master drains the requests in
hand, ``qcluster`` lets each worker finish the task in hand — and SIGKILLs whatever is left of a
child's process group when STOP_SECONDS have passed, so everything has exited within 10 s. (Signalling
the whole group instead would reach every django-q2 process at once and race their shutdowns.) If
any child dies on its own, the others are stopped too: a half-up instance is worse than a stopped one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import connections

from kernel.metrics import multiproc_dir_clean
from turbobase.management.commands.tb_demo import DEMO_LOGINS
from turbobase.management.commands.tb_prepare import static_collect

# SIGTERM to SIGKILL: under 10 s, with room for the launcher's own exit. gunicorn drains for at most
# TURBOBASE_WEB_GRACEFUL_S (5) of it.
STOP_SECONDS = 8.5


@dataclass
class Child:
    name: str
    argv: list[str]
    process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(self.argv, start_new_session=True)

    @property
    def running(self) -> subprocess.Popen | None:
        """The child's process while it runs, else None."""
        return self.process if self.process is not None and self.process.poll() is None else None

    @property
    def is_running(self) -> bool:
        return self.running is not None

    @property
    def exit_code(self) -> int | None:
        return None if self.process is None else self.process.returncode

    def terminate(self) -> None:
        """SIGTERM to the child's main process only: it stops its own processes in order."""
        if process := self.running:
            process.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL to the still-running child's whole process group (its session)."""
        if process := self.running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def children_stop(children: list[Child], *, write: Callable[[str], object]) -> None:
    """SIGTERM every running child; SIGKILL what is still running after STOP_SECONDS."""
    for child in children:
        child.terminate()
    deadline = time.monotonic() + STOP_SECONDS
    while time.monotonic() < deadline and any(c.is_running for c in children):
        time.sleep(0.1)
    still = [c.name for c in children if c.is_running]
    if still:
        write(f"still running after {STOP_SECONDS:g} s: {', '.join(still)}; killed")
        for child in children:
            child.kill()


def port_wait(
    host: str, port: int, *, web: Child, stop: Callable[[], bool], timeout: float = 60.0
) -> bool:
    """Wait until the web server accepts connections (False if it died, never did, or we stop)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and web.is_running and not stop():
        try:
            with socket.create_connection(
                (host if host != "0.0.0.0" else "127.0.0.1", port), timeout=1
            ):
                return True
        except OSError:
            time.sleep(0.2)
    return False


class Command(BaseCommand):
    help = (
        "Start the web server (gunicorn) and the django-q2 workers; Ctrl-C or SIGTERM stops both."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--no-workers", action="store_true", help="web server only")

    def handle(self, *args, host: str, port: int, no_workers: bool, **options) -> None:
        static_collect()  # WhiteNoise serves STATIC_ROOT; a fresh checkout may not have collected yet
        multiproc_dir_clean()  # /metrics: the counts of an earlier start's processes are gone
        base = Path(settings.BASE_DIR)
        web = [
            sys.executable,
            "-m",
            "gunicorn",
            "--config",
            str(base / "turbobase" / "gunicorn_conf.py"),
            "--chdir",
            str(base),
            "--bind",
            f"{host}:{port}",
            "turbobase.wsgi",
        ]
        children = [Child("web", web)]
        if not no_workers:
            children.append(Child("workers", [sys.executable, str(base / "manage.py"), "qcluster"]))

        stopping = False

        def on_signal(signum: int, frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
        for child in children:
            child.start()
        if port_wait(host, port, web=children[0], stop=lambda: stopping):
            self._banner(host, port, with_workers=not no_workers)

        exit_code = 0
        while not stopping:
            dead = [c for c in children if not c.is_running]
            if dead:
                for child in dead:
                    self.stderr.write(f"{child.name} exited with code {child.exit_code}; stopping")
                exit_code = 1
                break
            time.sleep(0.2)
        self.stdout.write("stopping …")
        children_stop(children, write=self.stderr.write)
        self.stdout.write("stopped")
        # Everything it started has exited; skip the interpreter's teardown of a loaded Django
        # process (a second or more on a busy machine), which would count against the 10 s.
        self.stdout.flush()
        self.stderr.flush()
        os._exit(exit_code)

    def _banner(self, host: str, port: int, *, with_workers: bool) -> None:
        shown = "127.0.0.1" if host == "0.0.0.0" else host
        base = f"http://{shown}:{port}"
        lines = [
            "",
            f"Turbobase is up at {base}/",
            f"  admin     {base}/admin/",
            f"  API docs  {base}/api/docs",
            f"  health    {base}/v1/health",
            f"  web       gunicorn ({self._web_shape()})",
            f"  workers   {'django-q2 qcluster' if with_workers else 'not started (--no-workers)'}",
        ]
        logins = self._demo_logins()
        if logins:
            lines.append("  sign in   " + ", ".join(logins))
        lines += ["Ctrl-C stops everything.", ""]
        self.stdout.write("\n".join(lines))
        connections.close_all()  # the launcher keeps no database connection while it waits

    @staticmethod
    def _web_shape() -> str:
        processes = os.environ.get("WEB_CONCURRENCY", "2")
        threads = os.environ.get("TURBOBASE_WEB_THREADS", "3")
        return f"{processes} processes × {threads} threads"

    @staticmethod
    def _demo_logins() -> list[str]:
        """The demo logins that still have their demo password (never print a changed one)."""
        User = get_user_model()
        shown = []
        for username, password, is_admin in DEMO_LOGINS:
            user = User.objects.filter(**{User.USERNAME_FIELD: username}).first()
            if user is not None and user.check_password(password):
                shown.append(f"{username} / {password}{' (administrator)' if is_admin else ''}")
        return shown
