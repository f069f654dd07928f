"""Sleepers bench: N runs parked on a sleep step, every one due in the same second, woken by a real
``manage.py qcluster`` on the bench database. Printed, not asserted (speed is measured only here):

- wake-ups sent: how many of the runs the lanes' watch had handed to the broker (their ``wake_at``
  cleared by its claim) one second after ``wakeAt``, and when the last one was — the timer firing
  (sampled every 0.1 s);
- wake-up sent lateness: when each run was first seen claimed by the watch, after ``wakeAt``
  (to the 0.1 s sample), p50/p99/max;
- step recorded: how long after ``wakeAt`` each run's sleep step was recorded ``confirmed`` — the
  timer firing plus the wait for one of the lane's workers (``TURBOBASE_ASYNC_WORKERS``, 2).

The first run is parked by the engine itself; the others are copies of its parked row (what
parking writes), so the set-up costs seconds, not N deliveries.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres BENCH_DB=tb_bench_me \
        .venv/bin/python bench/sleepers.py [--sleepers 1000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from datetime import timedelta

from support import ROOT, bench_database

# isort: split

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402
from sync_invoke import bench_database_url, stop  # noqa: E402

from extensions.deploy import extension_deploy  # noqa: E402
from processes.engine.runner import run_deliver  # noqa: E402
from processes.invoke import run_invoke  # noqa: E402
from processes.models import ProcessRun, ProcessRunStep  # noqa: E402

PROCESS_ID = "bench:sleeper"
SOURCE = f"""import {{ defineProcess }} from '@turbobase/extensions';
export default defineProcess({{
  id: '{PROCESS_ID}',
  input: {{ type: 'object' }},
  steps: [{{ id: 'nap', sleep: '1h' }}],
}});
"""
LEAD_S = 15  # the qcluster starts (and its watch begins to look) well before the sleepers are due


def _ms(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def sleepers_bench(*, sleepers: int) -> dict:
    admin = get_user_model().objects.create_user("bench-admin", is_staff=True, is_superuser=True)
    extension_deploy(entry="processes/sleeper.ts", files={"processes/sleeper.ts": SOURCE}, by=admin)
    first = run_invoke(process_id=PROCESS_ID, body={}, user=admin)
    run_deliver(str(first.pk))  # the engine parks it on its sleep
    parked = ProcessRun.objects.get(pk=first.pk)
    assert parked.pending_reason == "awaitingTime", parked.pending_reason
    due = (timezone.now() + timedelta(seconds=LEAD_S)).replace(microsecond=0)
    copies = []
    for _ in range(sleepers - 1):
        copy = ProcessRun.objects.get(pk=parked.pk)
        copy.run_id = uuid.uuid4()
        copies.append(copy)
    ProcessRun.objects.bulk_create(copies, batch_size=500)
    ProcessRun.objects.filter(process_id=PROCESS_ID).update(wake_at=due, wait_deadline=due)
    connection.close()
    env = dict(os.environ, DATABASE_URL=bench_database_url(), TURBOBASE_BROKER="orm")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    log_path = ROOT / "var" / "bench-sleepers-qcluster.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        cluster = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "qcluster"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            limit = time.monotonic() + LEAD_S + 900
            runs = ProcessRun.objects.filter(process_id=PROCESS_ID)
            sent_at_1s, all_sent_ms = None, None
            lateness: list[float] = []
            while time.monotonic() < limit:
                now = timezone.now()
                if all_sent_ms is None and now >= due:
                    sent = runs.filter(wake_at__isnull=True).count()
                    # runs seen sent for the first time at this sample: their lateness (to 0.1 s;
                    # not enqueued_at, which a later re-send of a lost delivery moves)
                    lateness += [(now - due).total_seconds() * 1000] * (sent - len(lateness))
                    if sent_at_1s is None and now >= due + timedelta(seconds=1):
                        sent_at_1s = sent
                    if sent == sleepers:
                        all_sent_ms = (now - due).total_seconds() * 1000
                        sent_at_1s = sleepers if sent_at_1s is None else sent_at_1s
                if all_sent_ms is not None and not runs.exclude(state="committed").exists():
                    break
                time.sleep(0.1 if all_sent_ms is None else 0.5)
        finally:
            connection.close()
            stop(cluster)
    recorded = [
        (at - due).total_seconds() * 1000
        for at in ProcessRunStep.objects.filter(run__process_id=PROCESS_ID, step_id="nap")
        .filter(disposition="confirmed")
        .values_list("created_at", flat=True)
    ]
    early = sum(1 for ms in recorded if ms < 0)
    return {
        "sleepers": sleepers,
        "woken": len(recorded),
        "early": early,
        "sent_within_1s": sent_at_1s,
        "all_sent_ms": None if all_sent_ms is None else round(all_sent_ms),
        "sent_p50_ms": round(_ms(lateness, 50)) if lateness else None,
        "sent_p99_ms": round(_ms(lateness, 99)) if lateness else None,
        "sent_max_ms": round(max(lateness)) if lateness else None,
        "recorded_p50_ms": round(_ms(recorded, 50)),
        "recorded_p99_ms": round(_ms(recorded, 99)),
        "recorded_max_ms": round(max(recorded)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sleepers", type=int, default=1000)
    args = parser.parse_args()
    with bench_database():
        result = sleepers_bench(sleepers=args.sleepers)
    for key, value in result.items():
        print(f"  {key:<20} {value}")
    print("RESULT " + __import__("json").dumps(result), flush=True)


if __name__ == "__main__":
    main()
