"""The machine a bench ran on, and its load average while it ran (other work shares the cores)."""

from __future__ import annotations

import os
import statistics
import threading
from pathlib import Path

from django.db import connection


def machine_line() -> str:
    """Cores, CPU model and PostgreSQL version, as the table in ``bench/README.md`` gives them."""
    model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        version = cursor.fetchone()[0]
    return f"{os.cpu_count()} cores, {model}, PostgreSQL {version}"


class LoadSampler:
    """The 1-minute load average every ``every`` seconds while the benches run."""

    def __init__(self, every: float = 10.0) -> None:
        self.every, self.samples = every, [os.getloadavg()[0]]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.every):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> str:
        s = self.samples
        return (
            f"load average (1 min) during the run: min {min(s):.1f}, median "
            f"{statistics.median(s):.1f}, max {max(s):.1f} ({len(s)} samples, every {self.every:g} s)"
        )
