"""``manage.py qcluster``: start the workers of every lane, each its own django-q2 cluster.

Lanes are separate clusters (queues) with separate worker pools, so a long async run cannot
starve interactive ones: ``turbobase`` (outbound writes, sweeps), ``tb_sync`` and ``tb_async``.
With ``Q_CLUSTER_NAME`` set (or ``--cluster-name``) this is django-q2's own command for that one
cluster; a run lane's cluster also runs the watch that sends lost deliveries again
(``processes.engine.redelivery``). Started for every lane, this process runs the watch for both
run lanes, on the one connection it holds anyway. Each child dies with this process
(PR_SET_PDEATHSIG), so a SIGKILL leaves no orphans.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from django_q.management.commands.qcluster import Command as DjangoQCommand

from kernel.system_schedules import system_schedules_ensure
from processes.lanes import CLUSTER_LANES, LANE_CLUSTERS

LANES = ("turbobase", "tb_sync", "tb_async")
WATCH_ENV = "TURBOBASE_REDELIVERY_WATCH"
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    # Not Linux (no libc.so.6): children are still stopped on SIGTERM/SIGINT below.
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class Command(DjangoQCommand):
    help = "Start the django-q2 workers of every lane (turbobase, tb_sync, tb_async)."

    def handle(self, *args, **options):
        lane = options.get("cluster_name") or os.environ.get("Q_CLUSTER_NAME")
        if lane in LANES and not options.get("run_once"):
            return self.lane_handle(lane)
        if lane or options.get("run_once"):
            return super().handle(*args, **options)
        from processes.engine.redelivery import redelivery_interval, redelivery_look, wakeups_look
        from processes.engine.wakeups import WAKE_POLL_S

        system_schedules_ensure()
        manage = Path(__file__).resolve().parents[3] / "manage.py"
        # The run lanes' redelivery watch runs here, on this process's one connection.
        lane_env = {**os.environ, WATCH_ENV: "parent"}
        children = [
            subprocess.Popen(
                [sys.executable, str(manage), "qcluster"],
                env={**lane_env, "Q_CLUSTER_NAME": lane},
                preexec_fn=_die_with_parent,
            )
            for lane in LANES
        ]
        look_at = wake_look_at = time.monotonic()
        stopping = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        while True:
            codes = [child.poll() for child in children]
            if all(code is not None for code in codes):
                break
            if not stopping and any(code is not None for code in codes):
                self.stderr.write(f"a lane's cluster exited ({codes}); stopping the others")
                stop(signal.SIGTERM, None)
            if not stopping and time.monotonic() >= wake_look_at:
                wakeups_look(LANE_CLUSTERS)  # parked runs whose due time has come, within ~a second
                wake_look_at = time.monotonic() + WAKE_POLL_S
            if not stopping and time.monotonic() >= look_at:
                redelivery_look(LANE_CLUSTERS)
                look_at = time.monotonic() + redelivery_interval()
            time.sleep(0.1)
        if not stopping:
            sys.exit(1)

    def lane_handle(self, lane: str) -> None:
        """A lane's cluster, its heartbeat (``processes.heartbeats``: what /v1/health/ready reads)
        while its sentinel lives, and beside a run lane's workers the watch that re-sends lost
        deliveries."""
        from django_q.cluster import Cluster

        from processes.engine.redelivery import redelivery_watch
        from processes.heartbeats import Beater

        os.environ["Q_CLUSTER_NAME"] = lane
        cluster = Cluster()
        cluster.start()
        watching = lane in CLUSTER_LANES and os.environ.get(WATCH_ENV) != "parent"
        beater = Beater(lane, hold=watching)  # a watch holds a connection anyway

        def alive() -> bool:
            living = cluster.sentinel is not None and cluster.sentinel.is_alive()
            if living:
                beater.tick()
            return living

        if not watching:
            while alive():  # the all-lanes qcluster watches the run lanes for us
                time.sleep(0.5)
            return
        redelivery_watch(mode=CLUSTER_LANES[lane], alive=alive)
